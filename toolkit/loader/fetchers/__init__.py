"""The fetchers of a sync run: each reads one kind of stream from the service and yields what is to be written.

A fetcher is a generator function ``fetch(ctx, channel_ids, ...)`` taking the run's
:class:`~toolkit.loader.context.FetchContext`. It yields :class:`~toolkit.loader.unit_of_work.Write` items
(table, converted batch, cursor, refetch ids done), which the run hands to the unit of work in order; it reads the
warehouse only through ``ctx.read(fn)``, which commits what was yielded before and runs ``fn(warehouse)`` on the
unit of work's thread. It records problems, rejected records and gaps through ``ctx``. A fetcher may ``return`` a
value (the small lists return the channel ids), which :func:`toolkit.loader.run.drive` passes back.

One module per phase, in the run's order: :mod:`.small_lists`, :mod:`.watchers`, :mod:`.full_lists`,
:mod:`.events` (then :mod:`.gaps`), :mod:`.refetch`, :mod:`.non_terminal`; :mod:`.paged` holds the batching of
paged lists they share. Adding one: see docs/architecture.md, "The sync".
"""
