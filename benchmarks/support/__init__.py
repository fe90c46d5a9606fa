"""Code that both the benchmarks and the tests use: independent readings of the service (raw HTTP answers turned
into outcomes in plain Python, a Kaplan-Meier reference), the in-flight comparison, the latency proxy and request
bodies. It imports nothing from ``tests`` (the benchmarks must run without the test suite)."""
