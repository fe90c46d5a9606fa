"""The sandbox: a local emulator of the Channel-Based Chain Operations Service.

It imports nothing of the toolkit but :mod:`toolkit.spec`. ``Sandbox(...)`` builds the seeded state; ``sb.app`` is
the ASGI app; ``sb.serve()`` runs it with uvicorn on 127.0.0.1 in a thread; ``serve.run_server`` blocks.
"""

from toolkit.sandbox.sandbox import Sandbox

__all__ = ["Sandbox"]
