"""The rules worker's one boundary with Faust and aiokafka: the only code of the project that reads
or writes a private attribute of either (tests/unit/test_faust_boundary.py fails on any other).

- `config.app_settings`: the app's consumer, producer, commit and table settings;
- `producer.FaustProducer`, `table.MatchTable` / `table.TablePositions`, `group.FaustGroup`: the
  pipeline's ports (services/rules/ports.py) over Faust's producer, table and consumer;
- `fetch.install_fetch_path`, `group.commit_only_stored_positions`: the fetch path and the commit;
- `versions`: the versions of Faust and aiokafka all this was tested with; the worker refuses others.

The rest of the worker uses Faust's public API only (services/rules/app.py: the app, its topic, its
table, its agent and timers, its signals). Every workaround of faust-streaming 0.15.3 (aiokafka
0.14.0), each with its reason and a decision record (docs/decisions/index.md, "Each Faust
workaround"), with its tests in tests/unit/test_faust_adapter.py, test_faust_group.py and
test_faust_fetch.py:

1. `fetch.bound_fetch_long_poll`: Faust hard-codes aiokafka's fetch long-poll at 1.5 s.
2. `group.commit_only_stored_positions`: Faust commits what it acked, which can run ahead of what was
   answered around a rebalance; and the acks below each commit are forgotten as Faust's commit
   would (else they are kept forever). Faust's driver stops the worker when Kafka refuses a commit
   around a rebalance; `group.commit_in_thread` logs it, and the next commit carries the offsets.
3. `table.MatchTable`: a batch mixes partitions, so Faust's "current event" cannot name a write's
   changelog partition; recovery is last-write-wins, so a worker that was paused past its
   session (GC, SIGSTOP, a VM pause) and wrote older states after the new owner's would roll the
   match back at the next recovery: here the state with the highest moves offset wins; and Faust
   only logs a changelog write Kafka did not take (`_on_published error`), so a state could be
   lost while a later position is stored: here the worker awaits its writes (`acknowledged`).
   Its writes go to the producer directly, in order, not through Faust's one-record-per-turn
   `send_soon` buffer, which held the pipeline up.
4. `recovery.TableManager` / `Recovery`: when the assignment changes while a recovery runs (a worker
   joins), Faust seeks standby partitions whose start offset it never built (None) and aiokafka
   raises `ValueError: Offset must be a positive integer`, which stops the worker. And Faust ends
   a recovery pass when the next rebalance's assignment arrives, not when its revocation does, so
   a pass ran on through the next join and resumed its old partitions once the new assignment
   was in place; a partition taken over then had a record of the old assignment counted as read,
   and the new pass skipped the records before it (states rolled back; here a pass ends at the
   revocation, and a partition taken over is read from where its start was built, with a
   warning if anything else was counted). "Taken over" is measured against the last recovery
   that completed, not the last pass: a pass cut short had made a partition active unread. The
   changelog queue is cleared right after the seek (resuming the flow would clear it a moment
   later, but Faust's reader could count a record of before the seek in between). Faust signals
   `on_rebalance_complete` even for a pass the next rebalance overtook: `Recovery.superseded`
   tells the handlers that mark the worker ready.
5. `group.FaustGroup.fetch_again`: Faust's `Consumer.seek` calls aiokafka's seek from the app's
   thread while the consumer lives in its own thread (AIOKafkaConsumerThread); under load that
   raced the fetcher (`KeyError` in aiokafka's `fetched_records`, the Fetcher crashed).
   `group.seek_if_assigned` seeks in the consumer's thread, and only a partition still assigned
   (aiokafka refuses a revoked one with `IllegalStateError`, which stopped the worker).
6. `table.create_changelog_before_joining`: Faust creates the table's changelog topic while the worker
   starts, but the group's first assignment is computed from metadata that may not show it yet
   (a cluster propagates new topics more slowly than one broker); the assignor then leaves the
   changelog out ("Ignoring missing topic"), and until the metadata is refreshed (minutes) a
   worker taking partitions over recovers nothing: it answered moves of existing matches with
   unknown_match (seen on a cluster, scaling 1 -> 3 workers). The worker makes the topic,
   and waits for its leaders, before Faust starts.
7. `fetch.deliver_in_batches`: Faust hands the agent one event at a time, at a high CPU cost per event
   before the agent sees it: its drain
   loop races every message against a flow suspension with `mode`'s `wait_first` (four tasks and
   an `asyncio.wait` per message), then the conductor, a channel queue and the stream iterator
   each take a turn. The worker's drain hands the move records of each fetch to the fold loop's
   buffer as one list, with Faust's rules kept (flow control, generation, read offsets: records
   below the read offset are dropped as Faust drops them); every other record (changelog, standby)
   still goes to Faust's own callback, one after the other, with one race against a flow
   suspension per fetch instead of one per record.
8. `producer.Linger`: Faust gives aiokafka one linger for the producer's life (`producer_linger`); the
   worker sets it per batch: none for a few moves (a client waits for its answer), a little
   while many come together, so that a batch's results and the states and positions of the
   batches before it share produce requests.
9. `fetch.count_seeks`: aiokafka forgets what it fetched of a partition when the partition is seeked,
   but records already on their way from the consumer's thread to Faust's are not recalled: a
   recovery that seeked a changelog partition back to its start could count such a record (of a
   later offset) as read and skip every record before it. The drain drops a changelog record
   whose partition was seeked after it was fetched.
10. `producer.FaustProducer.send`: Faust's `Producer.send` raises its own `ProducerSendError`
   from any error aiokafka raises before sending, so a record over the producer's request size
   (a dead letter keeping a huge key) looked like Kafka failing: the worker stopped, and its
   restart met the same record again. The record's own refusal is raised as itself, so the
   record is replaced like one the broker refused.

Nothing is imported here: `versions` is read before Faust is imported (it is slow to import).
"""
