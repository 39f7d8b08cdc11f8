"""SQL of the PostgreSQL backend: versioned migrations and named statements.

``MIGRATIONS`` is append-only: the index of a migration plus one is the schema version it
produces, recorded in ``runjournal_schema_version``. Never edit a released migration; add one.

Storage choices:

* ``content`` and ``metadata`` are ``json`` columns holding the canonical text of
  :func:`journal.encoding.dumps`. ``json`` (unlike ``jsonb``) keeps the text exactly as
  written, so every value round-trips: ``jsonb`` would reject ``\\u0000`` in strings and turn
  numbers into ``numeric`` (``1e300`` would come back as an ``int``). The JSON operators still
  work on ``json`` columns for ad-hoc queries.
* ``created_at`` is ``timestamptz`` (microseconds, like Python's ``datetime``).
* The gap-free seq comes from ``runjournal_thread_heads``: each append bumps its thread's head
  row inside the write transaction (``INSERT … ON CONFLICT … DO UPDATE … RETURNING``), which
  locks the row until commit, so writers of one thread serialise and a rolled-back batch
  leaves no gap.
* A trigger rejects every UPDATE, DELETE and TRUNCATE of events. The only deletion is a whole
  thread through ``runjournal_delete_thread(thread_id)`` (version 2), a ``SECURITY DEFINER``
  function owned by the schema owner: the trigger lets a DELETE through only for a role that
  is (a member of) the table's owner and inside that function, so an ordinary role holding
  DELETE rights cannot delete single events, even with ``SET LOCAL runjournal.allow_delete``.
  Thread heads are deleted with their thread only, and a deferred constraint trigger checks
  at commit that every head written equals its thread's last seq (``UPDATE`` of a head that
  would open a gap fails). No role but the owner gets UPDATE/DELETE/TRUNCATE from the schema.
* Runs and usage (version 3) are kept by every append, in the statement that inserts its
  events (:mod:`journal._postgres_runs`): ``runjournal_runs``, one row per ``(thread_id,
  run_id)`` (pages by ``(thread_id, first_seq)``, lookups by ``run_id``), and
  ``runjournal_thread_usage``, a thread's token usage in buckets ``(scope, key)`` — the
  total (which also counts the thread's runs), each model, each caller. They are deleted
  only with their thread; a database older than :data:`RUNS_SINCE` has them filled from its
  events when it is migrated.
"""

from __future__ import annotations

from typing import Final

from journal._postgres_runs import runs_upsert, usage_upsert

__all__ = [
    "ADVISORY_LOCK_KEY",
    "MIGRATIONS",
    "RUNS_SINCE",
    "SCHEMA_VERSION",
]

#: Key of the transaction advisory lock held while migrating (concurrent first opens).
ADVISORY_LOCK_KEY: Final = 0x72756E6A  # "runj"

MIGRATIONS: Final[tuple[str, ...]] = (
    # 1: events, thread heads, indexes, append-only trigger
    """
    CREATE TABLE runjournal_events (
        thread_id  text        NOT NULL,
        seq        bigint      NOT NULL CHECK (seq >= 1),
        event_id   text        NOT NULL,
        run_id     text        NOT NULL,
        category   text        NOT NULL,
        event_type text        NOT NULL,
        content    json        NOT NULL,
        metadata   json        NOT NULL,
        created_at timestamptz NOT NULL,
        CONSTRAINT runjournal_events_thread_seq UNIQUE (thread_id, seq),
        CONSTRAINT runjournal_events_event_id UNIQUE (event_id)
    );
    CREATE INDEX runjournal_events_run ON runjournal_events (thread_id, run_id, seq);
    CREATE INDEX runjournal_events_category ON runjournal_events (thread_id, category, seq);
    CREATE TABLE runjournal_thread_heads (
        thread_id     text        PRIMARY KEY,
        last_seq      bigint      NOT NULL,
        last_event_at timestamptz NOT NULL
    );
    CREATE INDEX runjournal_thread_heads_recent
        ON runjournal_thread_heads (last_event_at DESC, thread_id COLLATE "C" DESC);
    CREATE FUNCTION runjournal_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE'
           AND current_setting('runjournal.allow_delete', true) = 'on' THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'runjournal events are append-only (% rejected)', TG_OP
            USING ERRCODE = 'restrict_violation';
    END;
    $$;
    CREATE TRIGGER runjournal_events_append_only
        BEFORE UPDATE OR DELETE OR TRUNCATE ON runjournal_events
        FOR EACH STATEMENT EXECUTE FUNCTION runjournal_events_append_only();
    """,
    # 2: only the schema owner deletes, and only whole threads (runjournal_delete_thread, a
    # SECURITY DEFINER function); thread heads always equal their thread's last seq
    """
    CREATE OR REPLACE FUNCTION runjournal_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE'
           AND current_setting('runjournal.allow_delete', true) = 'on'
           AND pg_has_role(current_user,
                           (SELECT c.relowner FROM pg_class c WHERE c.oid = TG_RELID),
                           'MEMBER') THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'runjournal % is append-only (% rejected; delete whole threads with '
                        'runjournal_delete_thread)', TG_TABLE_NAME, TG_OP
            USING ERRCODE = 'restrict_violation';
    END;
    $$;
    CREATE TRIGGER runjournal_thread_heads_no_delete
        BEFORE DELETE OR TRUNCATE ON runjournal_thread_heads
        FOR EACH STATEMENT EXECUTE FUNCTION runjournal_events_append_only();
    CREATE FUNCTION runjournal_thread_head_matches() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE
        t text;
        head bigint;
        last bigint;
    BEGIN
        FOREACH t IN ARRAY CASE WHEN TG_OP = 'UPDATE' THEN ARRAY[NEW.thread_id, OLD.thread_id]
                                ELSE ARRAY[NEW.thread_id] END LOOP
            SELECT h.last_seq INTO head FROM runjournal_thread_heads h WHERE h.thread_id = t;
            SELECT max(e.seq) INTO last FROM runjournal_events e WHERE e.thread_id = t;
            IF head IS DISTINCT FROM last THEN
                RAISE EXCEPTION 'runjournal thread head of % must be its last seq (% <> %)',
                                t, head, last
                    USING ERRCODE = 'restrict_violation';
            END IF;
        END LOOP;
        RETURN NULL;
    END;
    $$;
    CREATE CONSTRAINT TRIGGER runjournal_thread_heads_match_events
        AFTER INSERT OR UPDATE ON runjournal_thread_heads
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION runjournal_thread_head_matches();
    CREATE FUNCTION runjournal_delete_thread(p_thread_id text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
        deleted bigint;
    BEGIN
        -- waits for in-flight appends of the thread; no head, no event: a first append in
        -- flight is invisible here and commits after this delete, whole
        PERFORM 1 FROM runjournal_thread_heads WHERE thread_id = p_thread_id FOR UPDATE;
        IF NOT FOUND THEN
            RETURN 0;
        END IF;
        PERFORM set_config('runjournal.allow_delete', 'on', true);
        WITH gone AS (
            DELETE FROM runjournal_events WHERE thread_id = p_thread_id RETURNING 1
        ) SELECT count(*) INTO deleted FROM gone;
        DELETE FROM runjournal_thread_heads WHERE thread_id = p_thread_id;
        PERFORM set_config('runjournal.allow_delete', 'off', true);
        RETURN deleted;
    END;
    $$;
    REVOKE UPDATE, DELETE, TRUNCATE ON runjournal_events, runjournal_thread_heads FROM PUBLIC;
    """,
    # 3: runs and usage kept at append (list_runs pages, get_run by id, read_usage); deleted
    # only with their thread, by runjournal_delete_thread
    """
    CREATE TABLE runjournal_runs (
        thread_id            text        NOT NULL,
        run_id               text        NOT NULL,
        first_seq            bigint      NOT NULL,
        last_seq             bigint      NOT NULL,
        started_at           timestamptz NOT NULL,
        last_event_at        timestamptz NOT NULL,
        event_count          bigint      NOT NULL,
        lifecycle            text,
        ended_at             timestamptz,
        terminal_duration_ms float8,
        error_type           text,
        error                text,
        models               text[]      NOT NULL,
        input_tokens         bigint      NOT NULL,
        output_tokens        bigint      NOT NULL,
        total_tokens         bigint      NOT NULL,
        cache_read_tokens    bigint      NOT NULL,
        reasoning_tokens     bigint      NOT NULL,
        llm_calls            bigint      NOT NULL,
        tool_calls           bigint      NOT NULL,
        first_human          text,
        last_ai              text,
        PRIMARY KEY (thread_id, run_id)
    );
    CREATE UNIQUE INDEX runjournal_runs_page ON runjournal_runs (thread_id, first_seq);
    CREATE INDEX runjournal_runs_run_id
        ON runjournal_runs (run_id, started_at, thread_id COLLATE "C");
    CREATE TABLE runjournal_thread_usage (
        thread_id         text   NOT NULL,
        scope             text   NOT NULL,
        key               text   NOT NULL,
        calls             bigint NOT NULL,
        input_tokens      bigint NOT NULL,
        output_tokens     bigint NOT NULL,
        total_tokens      bigint NOT NULL,
        cache_read_tokens bigint NOT NULL,
        reasoning_tokens  bigint NOT NULL,
        runs              bigint NOT NULL,
        PRIMARY KEY (thread_id, scope, key)
    );
    CREATE TRIGGER runjournal_runs_no_delete
        BEFORE DELETE OR TRUNCATE ON runjournal_runs
        FOR EACH STATEMENT EXECUTE FUNCTION runjournal_events_append_only();
    CREATE TRIGGER runjournal_thread_usage_no_delete
        BEFORE DELETE OR TRUNCATE ON runjournal_thread_usage
        FOR EACH STATEMENT EXECUTE FUNCTION runjournal_events_append_only();
    CREATE OR REPLACE FUNCTION runjournal_delete_thread(p_thread_id text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DECLARE
        deleted bigint;
    BEGIN
        -- waits for in-flight appends of the thread; no head, no event: a first append in
        -- flight is invisible here and commits after this delete, whole
        PERFORM 1 FROM runjournal_thread_heads WHERE thread_id = p_thread_id FOR UPDATE;
        IF NOT FOUND THEN
            RETURN 0;
        END IF;
        PERFORM set_config('runjournal.allow_delete', 'on', true);
        WITH gone AS (
            DELETE FROM runjournal_events WHERE thread_id = p_thread_id RETURNING 1
        ) SELECT count(*) INTO deleted FROM gone;
        DELETE FROM runjournal_runs WHERE thread_id = p_thread_id;
        DELETE FROM runjournal_thread_usage WHERE thread_id = p_thread_id;
        DELETE FROM runjournal_thread_heads WHERE thread_id = p_thread_id;
        PERFORM set_config('runjournal.allow_delete', 'off', true);
        RETURN deleted;
    END;
    $$;
    REVOKE UPDATE, DELETE, TRUNCATE ON runjournal_runs, runjournal_thread_usage FROM PUBLIC;
    """,
)

SCHEMA_VERSION: Final = len(MIGRATIONS)
#: A database migrated from a version below this one gets its runs and usage filled from its
#: events (raise it with a migration that changes what they hold).
RUNS_SINCE: Final = 3

CREATE_VERSION_TABLE: Final = """
CREATE TABLE IF NOT EXISTS runjournal_schema_version (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
LOCK_MIGRATIONS: Final = "SELECT pg_advisory_xact_lock(%s)"
SELECT_VERSION: Final = "SELECT coalesce(max(version), 0) FROM runjournal_schema_version"
INSERT_VERSION: Final = "INSERT INTO runjournal_schema_version (version) VALUES (%s)"
HAS_VERSION_TABLE: Final = "SELECT to_regclass('runjournal_schema_version') IS NOT NULL"
#: Whether the version table is in the schema a migration creates tables in (not only
#: somewhere on ``search_path``).
HAS_VERSION_TABLE_HERE: Final = (
    "SELECT to_regclass(format('%I.runjournal_schema_version', current_schema())) IS NOT NULL"
)

EVENT_COLUMNS: Final = (
    "thread_id, seq, event_id, run_id, category, event_type, "
    "content::text, metadata::text, created_at"
)

#: Which of a batch's threads have a head (committed).
HEADS_OF: Final = "SELECT thread_id FROM runjournal_thread_heads WHERE thread_id = ANY(%s::text[])"
#: The heads of a batch's threads, locked in the order every writer takes them (a retry's
#: first statement: it waits for the writers whose batches of these threads are in flight,
#: so that the look-up of stored ids after it sees what they stored).
LOCK_HEADS: Final = (
    "SELECT thread_id FROM runjournal_thread_heads WHERE thread_id = ANY(%s::text[]) "
    'ORDER BY thread_id COLLATE "C" FOR UPDATE'
)
SELECT_EXISTING: Final = (
    f"SELECT {EVENT_COLUMNS} FROM runjournal_events WHERE event_id = ANY(%b::text[])"
)

# Appends the events of one thread in one statement: bumps the thread's head row by
# %(count)s (the row stays locked until commit, which serialises writers of the thread and
# rolls the bump back with a failed batch), inserts the events numbered from the old head
# on, in array order, and merges the batch's runs and usage into the stored ones (they read
# the head, so they run once it is locked). Returns the new last seq. last_event_at is the
# created_at of the thread's highest seq, as list_threads reports it. Its whitespace is
# squeezed: psycopg converts statements of up to 4 KiB once, longer ones at every call.
_BEFORE_BATCH: Final = "head.base"  # the thread's last seq before the batch
APPEND_THREAD: Final = " ".join(
    f"""
WITH head AS (
    INSERT INTO runjournal_thread_heads AS h (thread_id, last_seq, last_event_at)
    VALUES (%(thread_id)s, %(count)s::bigint, %(last_event_at)s)
    ON CONFLICT (thread_id) DO UPDATE
    SET last_seq = h.last_seq + EXCLUDED.last_seq,
        last_event_at = EXCLUDED.last_event_at
    RETURNING last_seq, last_seq - %(count)s::bigint AS base
), inserted AS (
    INSERT INTO runjournal_events
        (thread_id, seq, event_id, run_id, category, event_type, content, metadata, created_at)
    SELECT %(thread_id)s, head.base + e.n, e.event_id, e.run_id,
           e.category, e.event_type, e.content, e.metadata, e.created_at
    FROM head, unnest(
        %(event_id)b::text[], %(run_id)b::text[], %(category)b::text[],
        %(event_type)b::text[], %(content)b::json[], %(metadata)b::json[],
        %(created_at)b::timestamptz[]
    ) WITH ORDINALITY
      AS e(event_id, run_id, category, event_type, content, metadata, created_at, n)
), runs AS (
    {runs_upsert(_BEFORE_BATCH, "head,")}
), usage AS (
    {usage_upsert(f"(SELECT count(*) FROM runs, head WHERE runs.first_seq > {_BEFORE_BATCH})")}
)
SELECT last_seq FROM head
""".split()
)
#: The runs and usage of a whole thread, from its stored events (a migration's backfill):
#: the records' seqs are the seqs themselves, ``new_runs`` the thread's runs.
BACKFILL_RUNS: Final = f"WITH runs AS ({runs_upsert('0')}) {usage_upsert('%(new_runs)s::bigint')}"

#: A page of a thread's events after a seq, in seq order (parameters: thread, seq, limit).
EVENTS_AFTER: Final = (
    f"SELECT {EVENT_COLUMNS} FROM runjournal_events WHERE thread_id = %s AND seq > %s "
    "ORDER BY seq LIMIT %s"
)

SELECT_LAST_SEQ: Final = "SELECT last_seq FROM runjournal_thread_heads WHERE thread_id = %s"

#: The only way to delete: a whole thread, events and head, in one SECURITY DEFINER call.
DELETE_THREAD: Final = "SELECT runjournal_delete_thread(%s)"

# Thread summaries from the head table (recency order via its index); the run count is the
# total usage bucket's, the first event time a lookup in the (thread_id, seq) unique index.
LIST_THREADS: Final = """
SELECT h.thread_id, h.last_seq,
       coalesce((SELECT u.runs FROM runjournal_thread_usage u
                  WHERE u.thread_id = h.thread_id AND u.scope = 'total' AND u.key = ''), 0),
       (SELECT e.created_at FROM runjournal_events e
         WHERE e.thread_id = h.thread_id AND e.seq = 1),
       h.last_event_at
FROM runjournal_thread_heads h
ORDER BY h.last_event_at DESC, h.thread_id COLLATE "C" DESC
LIMIT %s OFFSET %s
"""
