"""The PostgreSQL store's schema: its versioned migrations, and reading and migrating a database's version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nia_core.sessions.store_errors import CorruptRecord, NewerSchema, StoreError

if TYPE_CHECKING:
    import psycopg

MIN_SERVER_VERSION = 130000
"""PostgreSQL 13: ``pg_current_xact_id`` / ``pg_xact_status`` tell a lost commit's outcome."""

MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            # Content-addressed texts: snapshot values, removal texts, baseline segments.
            # BYTEA (UTF-8) because a TEXT column cannot hold a NUL character.
            "CREATE TABLE blobs (id TEXT PRIMARY KEY, data BYTEA NOT NULL)",
            # A snapshot is a manifest {key: [value id, removal id | null]}, itself content-addressed.
            "CREATE TABLE snapshots (id TEXT PRIMARY KEY, manifest TEXT NOT NULL)",
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                location TEXT NOT NULL,
                model TEXT NOT NULL,
                created TEXT NOT NULL,
                revision BIGINT NOT NULL DEFAULT 0,
                epoch INTEGER,
                history_from BIGINT NOT NULL DEFAULT 0,
                summary_seq BIGINT,
                compaction TEXT
            )""",
            """CREATE TABLE epochs (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                number INTEGER NOT NULL,
                baseline_id TEXT NOT NULL,
                segments TEXT NOT NULL,
                initial_snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                snapshot_id TEXT NOT NULL REFERENCES snapshots(id),
                start_seq BIGINT NOT NULL,
                model TEXT NOT NULL,
                location TEXT NOT NULL,
                reason TEXT NOT NULL,
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, number)
            )""",
            """CREATE TABLE messages (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                seq BIGINT NOT NULL,
                epoch INTEGER,
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                snapshot_id TEXT REFERENCES snapshots(id),
                created TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            """CREATE TABLE pending (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                kind TEXT NOT NULL,
                body TEXT NOT NULL,
                created TEXT NOT NULL
            )""",
            "CREATE INDEX pending_by_session ON pending (session_id, id)",
        ),
    ),
    (
        2,
        (
            # Each reply's model, token usage and stop reason (nia_core/sessions/replies.py); NULL before.
            "ALTER TABLE messages ADD COLUMN reply TEXT",
        ),
    ),
    (
        3,
        (
            # One row per write made by a server-side function below, in the write's own transaction:
            # a token the client chose and what the write returned. A connection lost before the answer
            # arrives is resolved by this row: present, the write committed (and here is its result);
            # absent, a recovery inserts the token with no result, so the write can never commit later.
            """CREATE TABLE nia_writes (
                token TEXT PRIMARY KEY,
                result TEXT,
                created TIMESTAMPTZ NOT NULL DEFAULT now()
            )""",
            "CREATE INDEX nia_writes_by_age ON nia_writes (created)",
            # A session, its active epoch, that epoch's snapshot manifest, its pending input and its whole
            # history, as one JSON value read in one statement (one snapshot of the database).
            """CREATE FUNCTION nia_view(p_session TEXT) RETURNS json LANGUAGE sql STABLE AS $$
                SELECT json_build_array(
                    json_build_array(s.id, s.location, s.model, s.created, s.revision, s.epoch,
                                     s.history_from, s.summary_seq, s.compaction),
                    json_build_array(e.number, e.baseline_id, e.snapshot_id, e.initial_snapshot_id,
                                     e.start_seq, e.model, e.location, e.reason, e.created, e.segments),
                    sn.manifest,
                    (SELECT coalesce(json_agg(json_build_array(p.id, p.kind, p.body) ORDER BY p.id), '[]')
                       FROM pending p WHERE p.session_id = s.id),
                    (SELECT coalesce(json_agg(json_build_array(m.seq, m.epoch, m.kind, m.body, m.snapshot_id,
                                                               m.created, m.reply) ORDER BY m.seq), '[]')
                       FROM messages m WHERE m.session_id = s.id))
                FROM sessions s
                LEFT JOIN epochs e ON e.session_id = s.id AND e.number = s.epoch
                LEFT JOIN snapshots sn ON sn.id = e.snapshot_id
                WHERE s.id = p_session
            $$""",
            # Records a write's token and result (see nia_writes); now and then forgets day-old ones.
            """CREATE FUNCTION nia_written(p_token TEXT, p_result TEXT) RETURNS void LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO nia_writes (token, result) VALUES (p_token, p_result);
                IF random() < 0.001 THEN
                    DELETE FROM nia_writes WHERE created < now() - interval '1 day';
                END IF;
            END
            $$""",
            # Whether a stored body reads as a message (an object whose text, if any, is a string).
            """CREATE FUNCTION nia_body_ok(p_body TEXT) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
            BEGIN
                RETURN json_typeof(p_body::json) = 'object'
                    AND coalesce(json_typeof(p_body::json -> 'text'), 'string') = 'string';
            EXCEPTION WHEN others THEN
                RETURN false;
            END
            $$""",
            # enqueue(): input kept pending, under the session's row lock (a concurrent promote sees it wholly
            # before or wholly after).
            """CREATE FUNCTION nia_enqueue(p_token TEXT, p_session TEXT, p_kind TEXT, p_body TEXT, p_created TEXT)
            RETURNS json LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM 1 FROM sessions WHERE id = p_session FOR NO KEY UPDATE;
                IF NOT FOUND THEN
                    RETURN json_build_object('error', 'unknown');
                END IF;
                INSERT INTO pending (session_id, kind, body, created) VALUES (p_session, p_kind, p_body, p_created);
                PERFORM nia_written(p_token, 'null');
                RETURN json_build_object('ok', NULL, 'view', nia_view(p_session));
            END
            $$""",
            # promote(): every pending input into the history, in order, fenced on an active epoch at
            # p_location; the session's row lock keeps seq gap-free and each input promoted once.
            """CREATE FUNCTION nia_promote(p_token TEXT, p_session TEXT, p_location TEXT, p_kinds TEXT[],
                                           p_created TEXT) RETURNS json LANGUAGE plpgsql AS $$
            DECLARE
                s RECORD;
                bad RECORD;
                v_seq BIGINT;
                v_rows json;
                v_result json;
            BEGIN
                SELECT epoch, location INTO s FROM sessions WHERE id = p_session FOR NO KEY UPDATE;
                IF NOT FOUND THEN
                    RETURN json_build_object('error', 'unknown');
                ELSIF s.epoch IS NULL THEN
                    RETURN json_build_object('conflict', 'no active epoch (moved?)');
                ELSIF s.location <> p_location THEN
                    RETURN json_build_object('conflict', 'moved to ' || s.location);
                END IF;
                FOR bad IN SELECT id, kind, body FROM pending WHERE session_id = p_session ORDER BY id LOOP
                    IF NOT (bad.kind = ANY (p_kinds)) OR NOT nia_body_ok(bad.body) THEN
                        RETURN json_build_object('damaged', json_build_array(bad.id, bad.kind, bad.body));
                    END IF;
                END LOOP;
                SELECT coalesce(max(seq), 0) INTO v_seq FROM messages WHERE session_id = p_session;
                WITH gone AS (DELETE FROM pending WHERE session_id = p_session RETURNING id, kind, body),
                numbered AS (SELECT id, kind, body, v_seq + row_number() OVER (ORDER BY id) AS seq FROM gone),
                added AS (
                    INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created)
                    SELECT p_session, seq, s.epoch, kind, body, NULL, p_created FROM numbered RETURNING 1
                )
                SELECT coalesce(json_agg(json_build_array(id, kind, body, seq) ORDER BY seq), '[]')
                INTO v_rows FROM numbered;
                v_result := json_build_array(s.epoch, v_rows);
                PERFORM nia_written(p_token, v_result::text);
                RETURN json_build_object('ok', v_result, 'view', nia_view(p_session));
            END
            $$""",
            # append(): one message (a reply) at the end of the history, under the session's row lock.
            """CREATE FUNCTION nia_append(p_token TEXT, p_session TEXT, p_kind TEXT, p_body TEXT, p_reply TEXT,
                                          p_created TEXT) RETURNS json LANGUAGE plpgsql AS $$
            DECLARE
                v_epoch INTEGER;
                v_seq BIGINT;
                v_result json;
            BEGIN
                SELECT epoch INTO v_epoch FROM sessions WHERE id = p_session FOR NO KEY UPDATE;
                IF NOT FOUND THEN
                    RETURN json_build_object('error', 'unknown');
                END IF;
                IF v_epoch IS NULL THEN
                    SELECT max(number) INTO v_epoch FROM epochs WHERE session_id = p_session;
                END IF;
                SELECT coalesce(max(seq), 0) + 1 INTO v_seq FROM messages WHERE session_id = p_session;
                INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created, reply)
                VALUES (p_session, v_seq, v_epoch, p_kind, p_body, NULL, p_created, p_reply);
                v_result := json_build_array(v_seq, v_epoch);
                PERFORM nia_written(p_token, v_result::text);
                RETURN json_build_object('ok', v_result);
            END
            $$""",
            # admit_update(): the compare-and-swap on the revision (re-checked against the newest row
            # version after any wait), then the system message and the epoch's new snapshot together.
            """CREATE FUNCTION nia_admit(p_token TEXT, p_session TEXT, p_expected BIGINT, p_epoch INTEGER,
                                         p_body TEXT, p_snapshot TEXT, p_created TEXT)
            RETURNS json LANGUAGE plpgsql AS $$
            DECLARE
                v_seq BIGINT;
                v_result json;
            BEGIN
                UPDATE sessions SET revision = revision + 1
                WHERE id = p_session AND revision = p_expected AND epoch = p_epoch;
                IF NOT FOUND THEN
                    IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = p_session) THEN
                        RETURN json_build_object('error', 'unknown');
                    END IF;
                    RETURN json_build_object('conflict', 'revision changed');
                END IF;
                SELECT coalesce(max(seq), 0) + 1 INTO v_seq FROM messages WHERE session_id = p_session;
                INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created)
                VALUES (p_session, v_seq, p_epoch, 'system_update', p_body, p_snapshot, p_created);
                UPDATE epochs SET snapshot_id = p_snapshot WHERE session_id = p_session AND number = p_epoch;
                v_result := json_build_array(v_seq);
                PERFORM nia_written(p_token, v_result::text);
                RETURN json_build_object('ok', v_result, 'view', nia_view(p_session));
            END
            $$""",
        ),
    ),
    (
        4,
        (
            # The history mark (nia_core/sessions/histories.py): a random token that any change to a session's
            # stored messages other than an append replaces, so a reader that validated the rows before reads
            # only the new ones. A column default: every row (existing ones too) gets a mark of its own.
            "ALTER TABLE sessions ADD COLUMN history_mark TEXT DEFAULT gen_random_uuid()::text",
            """CREATE FUNCTION nia_history_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'INSERT' THEN
                    -- nia appends after the last message; rows inserted before one already stored rewrite it
                    UPDATE sessions s SET history_mark = gen_random_uuid()::text
                    FROM (SELECT session_id, min(seq) AS low, count(*) AS added FROM nia_new GROUP BY session_id) n
                    WHERE s.id = n.session_id AND s.history_mark IS NOT NULL
                      AND (SELECT count(*) FROM messages m WHERE m.session_id = n.session_id AND m.seq >= n.low)
                          > n.added;
                ELSIF TG_OP = 'UPDATE' THEN
                    UPDATE sessions SET history_mark = gen_random_uuid()::text
                    WHERE history_mark IS NOT NULL
                      AND id IN (SELECT session_id FROM nia_old UNION SELECT session_id FROM nia_new);
                ELSIF TG_OP = 'DELETE' THEN
                    UPDATE sessions SET history_mark = gen_random_uuid()::text
                    WHERE history_mark IS NOT NULL AND id IN (SELECT session_id FROM nia_old);
                ELSE
                    UPDATE sessions SET history_mark = gen_random_uuid()::text WHERE history_mark IS NOT NULL;
                END IF;
                RETURN NULL;
            END
            $$""",
            # Statement-level, with transition tables: one UPDATE per statement however many rows it changed.
            """CREATE TRIGGER messages_inserted AFTER INSERT ON messages REFERENCING NEW TABLE AS nia_new
            FOR EACH STATEMENT EXECUTE FUNCTION nia_history_rewritten()""",
            """CREATE TRIGGER messages_updated AFTER UPDATE ON messages
            REFERENCING OLD TABLE AS nia_old NEW TABLE AS nia_new
            FOR EACH STATEMENT EXECUTE FUNCTION nia_history_rewritten()""",
            """CREATE TRIGGER messages_deleted AFTER DELETE ON messages REFERENCING OLD TABLE AS nia_old
            FOR EACH STATEMENT EXECUTE FUNCTION nia_history_rewritten()""",
            """CREATE TRIGGER messages_truncated AFTER TRUNCATE ON messages
            FOR EACH STATEMENT EXECUTE FUNCTION nia_history_rewritten()""",
            # The tail of a history (its last reply on) without reading the rest.
            "CREATE INDEX messages_replies ON messages (session_id, seq) WHERE kind = 'assistant'",
            # A session as one JSON value read in one statement (one snapshot of the database), sending only
            # what the reader lacks: the history rows after p_after when the session's mark is still p_mark
            # (every row otherwise; none when p_after is NULL; the tail, its last reply on, when it is
            # negative), and no snapshot manifest whose id, nor baseline segment list whose sha256, is in p_known.
            # [session, epoch, manifest, pending, mark, after, rows after `after`]. PL/pgSQL, not SQL: it keeps
            # its plan for the connection's life (a SQL function is planned again at every call).
            """CREATE FUNCTION nia_view(p_session TEXT, p_after BIGINT, p_mark TEXT, p_known TEXT[])
            RETURNS json LANGUAGE plpgsql STABLE AS $$
            BEGIN
                RETURN (SELECT json_build_array(
                    json_build_array(s.id, s.location, s.model, s.created, s.revision, s.epoch,
                                     s.history_from, s.summary_seq, s.compaction),
                    json_build_array(e.number, e.baseline_id, e.snapshot_id, e.initial_snapshot_id,
                                     e.start_seq, e.model, e.location, e.reason, e.created,
                                     CASE WHEN encode(sha256(convert_to(e.segments, 'UTF8')), 'hex') = ANY (p_known)
                                          THEN NULL ELSE e.segments END),
                    CASE WHEN e.snapshot_id = ANY (p_known) THEN NULL ELSE sn.manifest END,
                    (SELECT coalesce(json_agg(json_build_array(p.id, p.kind, p.body) ORDER BY p.id), '[]')
                       FROM pending p WHERE p.session_id = s.id),
                    s.history_mark,
                    h.after,
                    (SELECT coalesce(json_agg(json_build_array(m.seq, m.epoch, m.kind, m.body, m.snapshot_id,
                                                               m.created, m.reply) ORDER BY m.seq), '[]')
                       FROM messages m WHERE m.session_id = s.id AND m.seq > h.after))
                FROM sessions s
                CROSS JOIN LATERAL (SELECT CASE
                    WHEN p_after IS NULL THEN NULL
                    WHEN p_after >= 0 AND p_mark = s.history_mark THEN p_after
                    WHEN p_after < 0 THEN coalesce(
                        (SELECT max(seq) - 1 FROM messages WHERE session_id = s.id AND kind = 'assistant'),
                        (SELECT max(seq) FROM messages WHERE session_id = s.id), 0)
                    ELSE 0 END AS after) h
                LEFT JOIN epochs e ON e.session_id = s.id AND e.number = s.epoch
                LEFT JOIN snapshots sn ON sn.id = e.snapshot_id
                WHERE s.id = p_session);
            END
            $$""",
            # The writes of a turn again, answering with the view above. The functions of migration 3 stay,
            # so a runner of the previous nia keeps working until it restarts.
            """CREATE FUNCTION nia_enqueue(p_token TEXT, p_session TEXT, p_kind TEXT, p_body TEXT, p_created TEXT,
                                           p_after BIGINT, p_mark TEXT, p_known TEXT[])
            RETURNS json LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM 1 FROM sessions WHERE id = p_session FOR NO KEY UPDATE;
                IF NOT FOUND THEN
                    RETURN json_build_object('error', 'unknown');
                END IF;
                INSERT INTO pending (session_id, kind, body, created) VALUES (p_session, p_kind, p_body, p_created);
                PERFORM nia_written(p_token, 'null');
                RETURN json_build_object('ok', NULL, 'view', nia_view(p_session, p_after, p_mark, p_known));
            END
            $$""",
            """CREATE FUNCTION nia_promote(p_token TEXT, p_session TEXT, p_location TEXT, p_kinds TEXT[],
                                           p_created TEXT, p_after BIGINT, p_mark TEXT, p_known TEXT[])
            RETURNS json LANGUAGE plpgsql AS $$
            DECLARE
                s RECORD;
                bad RECORD;
                v_seq BIGINT;
                v_rows json;
                v_result json;
            BEGIN
                SELECT epoch, location INTO s FROM sessions WHERE id = p_session FOR NO KEY UPDATE;
                IF NOT FOUND THEN
                    RETURN json_build_object('error', 'unknown');
                ELSIF s.epoch IS NULL THEN
                    RETURN json_build_object('conflict', 'no active epoch (moved?)');
                ELSIF s.location <> p_location THEN
                    RETURN json_build_object('conflict', 'moved to ' || s.location);
                END IF;
                FOR bad IN SELECT id, kind, body FROM pending WHERE session_id = p_session ORDER BY id LOOP
                    IF NOT (bad.kind = ANY (p_kinds)) OR NOT nia_body_ok(bad.body) THEN
                        RETURN json_build_object('damaged', json_build_array(bad.id, bad.kind, bad.body));
                    END IF;
                END LOOP;
                SELECT coalesce(max(seq), 0) INTO v_seq FROM messages WHERE session_id = p_session;
                WITH gone AS (DELETE FROM pending WHERE session_id = p_session RETURNING id, kind, body),
                numbered AS (SELECT id, kind, body, v_seq + row_number() OVER (ORDER BY id) AS seq FROM gone),
                added AS (
                    INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created)
                    SELECT p_session, seq, s.epoch, kind, body, NULL, p_created FROM numbered RETURNING 1
                )
                SELECT coalesce(json_agg(json_build_array(id, kind, body, seq) ORDER BY seq), '[]')
                INTO v_rows FROM numbered;
                v_result := json_build_array(s.epoch, v_rows);
                PERFORM nia_written(p_token, v_result::text);
                RETURN json_build_object('ok', v_result, 'view', nia_view(p_session, p_after, p_mark, p_known));
            END
            $$""",
            """CREATE FUNCTION nia_admit(p_token TEXT, p_session TEXT, p_expected BIGINT, p_epoch INTEGER,
                                         p_body TEXT, p_snapshot TEXT, p_created TEXT,
                                         p_after BIGINT, p_mark TEXT, p_known TEXT[])
            RETURNS json LANGUAGE plpgsql AS $$
            DECLARE
                v_seq BIGINT;
                v_result json;
            BEGIN
                UPDATE sessions SET revision = revision + 1
                WHERE id = p_session AND revision = p_expected AND epoch = p_epoch;
                IF NOT FOUND THEN
                    IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = p_session) THEN
                        RETURN json_build_object('error', 'unknown');
                    END IF;
                    RETURN json_build_object('conflict', 'revision changed');
                END IF;
                SELECT coalesce(max(seq), 0) + 1 INTO v_seq FROM messages WHERE session_id = p_session;
                INSERT INTO messages (session_id, seq, epoch, kind, body, snapshot_id, created)
                VALUES (p_session, v_seq, p_epoch, 'system_update', p_body, p_snapshot, p_created);
                UPDATE epochs SET snapshot_id = p_snapshot WHERE session_id = p_session AND number = p_epoch;
                v_result := json_build_array(v_seq);
                PERFORM nia_written(p_token, v_result::text);
                RETURN json_build_object('ok', v_result, 'view', nia_view(p_session, p_after, p_mark, p_known));
            END
            $$""",
        ),
    ),
    (
        5,
        (
            # Naming a session by a prefix of its id reads a range of this index (the primary key's own
            # follows the database's collation, in which the ids a prefix names need not be adjacent).
            'CREATE INDEX sessions_by_id ON sessions (id COLLATE "C")',
        ),
    ),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this nia knows; a database at a higher version is refused."""

NIA_TABLES = ("blobs", "snapshots", "sessions", "epochs", "messages", "pending", "nia_writes")
MIGRATION_LOCK = 0x6E6961  # "nia": one advisory lock key per schema, so runners never migrate at once


def migrate(conn: psycopg.Connection[Any], url: str) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`; runners that start together take turns (an advisory lock)."""
    version = read_version(conn, url)
    if version == SCHEMA_VERSION:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))", (MIGRATION_LOCK,))
        version = read_version(conn, url)
        if version is None:
            conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            version = 0
        for target, statements in MIGRATIONS:
            if target > version:
                for statement in statements:
                    conn.execute(statement)  # type: ignore[arg-type]
                conn.execute("UPDATE schema_version SET version = %s", (target,))


def read_version(conn: psycopg.Connection[Any], url: str) -> int | None:
    """The schema version of the database ``url`` names (``None``: no nia tables yet); refuses foreign or newer ones."""
    # One statement, one snapshot: another runner's migration may commit at any moment.
    row = conn.execute(
        "SELECT current_schema(), to_regclass('schema_version') IS NOT NULL,"
        " array(SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()"
        " AND table_name = ANY(%s) ORDER BY table_name)",
        (list(NIA_TABLES),),
    ).fetchone()
    assert row is not None
    schema, has_version, found = row
    if schema is None:
        raise StoreError(
            f"the database {url} has no schema to create nia's tables in (does the schema in search_path exist?)"
        )
    if not has_version:
        if found:
            raise StoreError(
                f"schema {schema} of the database {url} is not a nia database "
                f"(it has tables {', '.join(found)} but no schema_version)"
            )
        return None
    rows = conn.execute("SELECT version FROM schema_version").fetchall()
    if len(rows) != 1 or not isinstance(rows[0][0], int):
        raise CorruptRecord(f"the database {url} has a damaged schema_version table")
    version = int(rows[0][0])
    if version > SCHEMA_VERSION:
        raise NewerSchema(
            f"the database {url} was written by a newer nia (schema version {version}; "
            f"this nia knows up to {SCHEMA_VERSION}); upgrade nia, or set NIA_DB to use another database"
        )
    return version
