"""The content store's PostgreSQL schema: its migrations, one tuple of statements per
version (see `Database`), and what runs after them at every start (`check_index`):
the re-index of a database whose tokens another tokenizer version made, then the
sealing of every chunk a process left pending.

The tables are described in `_pg`'s docstring, the search index's in `_pg_index`'s.
"""

from __future__ import annotations

from typing import Any, Final

from nativemcp.workers._database import read_version, write_version

from ._blockmax import fast_tokens
from ._pg_copy import token_text
from ._pg_locks import merge_all
from ._records import INDEX_VERSION, INSERT_BATCH

__all__ = ["COMPONENT", "INDEX_COMPONENT", "MIGRATIONS", "check_index"]

COMPONENT: Final = "content-store"
"""This schema's name in the shared schema-version table."""

_MIGRATION_3: Final = (
    # Postings per (token, chunk) and per-token counts updated on every write gave way
    # to sealed blocks written by a merge (see the module docstring).
    "DROP TABLE cs_postings",
    "DROP TABLE cs_terms",
    # Chunks at or below this id are in sealed blocks: 0, every chunk is pending (the
    # next start seals them).
    "ALTER TABLE cs_stores ADD COLUMN merged BIGINT NOT NULL DEFAULT 0",
    # A chunk's tokens in order as one text, each between spaces: written without the
    # array parsing that cost half the write path, matched with LIKE.
    "ALTER TABLE cs_chunks ALTER COLUMN tokens TYPE TEXT"
    " USING ' ' || array_to_string(tokens, ' ') || ' '",
    # The arrays held each token once, not in order: marked as another tokenizer's
    # index, so the start re-indexes every chunk from its text (`_reindex`).
    "UPDATE nativemcp_schema SET version = 0 WHERE component = 'content-store.index'",
    # A chunk row (text and tokens, a few KB) is stored as it is, not compressed once
    # over 2 KB: 1.2x the write path's speed, measured.
    "ALTER TABLE cs_chunks SET (toast_tuple_target = 8160)",
    # An item's text compressed with lz4 where the server has it (pglz, the default,
    # took a seventh of the write path's time).
    """DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'
                   AND 'lz4' = ANY (enumvals)) THEN
            ALTER TABLE cs_contents ALTER COLUMN body SET COMPRESSION lz4;
        END IF;
    END $$""",
    "CREATE INDEX cs_chunks_by_store ON cs_chunks (store_rid, id)",
    """CREATE TABLE cs_blocks (
        store_rid BIGINT NOT NULL,
        lo BIGINT NOT NULL,
        hi BIGINT NOT NULL,
        average FLOAT8 NOT NULL,
        size INTEGER NOT NULL,
        -- New with every sealing: what a search read of a block is checked against it.
        version BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (store_rid, lo)
    )""",
    # COLLATE "C": byte order, so the tokens a prefix starts are a range of the key;
    # the bound and count in the key's leaf, so reading them is an index-only scan.
    """CREATE TABLE cs_block_postings (
        store_rid BIGINT NOT NULL,
        token TEXT COLLATE "C" NOT NULL,
        lo BIGINT NOT NULL,
        bound FLOAT8 NOT NULL,
        df INTEGER NOT NULL,
        postings BYTEA NOT NULL,
        positions BYTEA NOT NULL,
        PRIMARY KEY (store_rid, token, lo) INCLUDE (bound, df)
    )""",
    # Packed postings do not compress: stored as they are, read without pglz (a search
    # read them 2x as fast, measured).
    "ALTER TABLE cs_block_postings ALTER COLUMN postings SET STORAGE EXTERNAL",
    "ALTER TABLE cs_block_postings ALTER COLUMN positions SET STORAGE EXTERNAL",
)
"""Schema version 3: the statements that replace the per-token tables with blocks."""

_MIGRATION_4: Final = (
    # Each postings row carries its block's version and average chunk length, so a
    # search reads them without joining cs_blocks: the join (a hash of every block,
    # built per statement) was a third of a search's first statement, measured
    # 190 -> 145 us. Rewritten with the block, as the rest of the row is.
    "ALTER TABLE cs_block_postings ADD COLUMN average FLOAT8, ADD COLUMN version BIGINT",
    "UPDATE cs_block_postings p SET average = b.average, version = b.version FROM cs_blocks b"
    " WHERE b.store_rid = p.store_rid AND b.lo = p.lo",
    "ALTER TABLE cs_block_postings ALTER COLUMN average SET NOT NULL,"
    " ALTER COLUMN version SET NOT NULL",
    # In the key's leaf too: a store of many blocks reads them with its bounds alone.
    "ALTER TABLE cs_block_postings DROP CONSTRAINT cs_block_postings_pkey,"
    " ADD PRIMARY KEY (store_rid, token, lo) INCLUDE (bound, df, average, version)",
    # The store's block count, kept by the merge, and its newest chunk id, kept by the
    # writes (the highest id it ever held: a delete leaves it, and a search's pending
    # tail then finds fewer rows than the store counts, and is read again). Reading
    # them in subqueries of a CTE cost a search's first statement 40-50 us, measured.
    "ALTER TABLE cs_stores ADD COLUMN blocks INTEGER NOT NULL DEFAULT 0,"
    " ADD COLUMN newest BIGINT NOT NULL DEFAULT 0",
    "UPDATE cs_stores s SET blocks = (SELECT count(*) FROM cs_blocks b WHERE b.store_rid = s.rid),"
    " newest = (SELECT coalesce(max(id), 0) FROM cs_chunks c WHERE c.store_rid = s.rid)",
)
"""Schema version 4: the block's version and average on each of its postings rows, the
block count and newest chunk id on the store's row."""

MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """CREATE TABLE cs_stores (
            rid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            description TEXT,
            session_id TEXT,
            created_at TIMESTAMPTZ NOT NULL,
            updated_at TIMESTAMPTZ NOT NULL,
            chunk_total BIGINT NOT NULL DEFAULT 0,
            token_total BIGINT NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX cs_stores_by_session ON cs_stores (session_id, rid)",
        """CREATE TABLE cs_contents (
            rid BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            store_rid BIGINT NOT NULL REFERENCES cs_stores (rid) ON DELETE CASCADE,
            filename TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            size BIGINT NOT NULL,
            line_count INTEGER NOT NULL,
            chunk_count INTEGER NOT NULL,
            preview TEXT NOT NULL,
            uploaded_at TIMESTAMPTZ NOT NULL,
            sha256 TEXT NOT NULL,
            body TEXT NOT NULL,
            UNIQUE (store_rid, sha256)
        )""",
        "CREATE INDEX cs_contents_by_store ON cs_contents (store_rid, rid)",
        """CREATE TABLE cs_chunks (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            content_rid BIGINT NOT NULL REFERENCES cs_contents (rid) ON DELETE CASCADE,
            store_rid BIGINT NOT NULL,
            seq INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            length INTEGER NOT NULL,
            tokens TEXT[] NOT NULL,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX cs_chunks_by_content ON cs_chunks (content_rid)",
        # COLLATE "C": byte order, so a prefix (LIKE 'x%') is a range scan of the key.
        """CREATE TABLE cs_postings (
            store_rid BIGINT NOT NULL,
            token TEXT COLLATE "C" NOT NULL,
            chunk_id BIGINT NOT NULL,
            tf INTEGER NOT NULL,
            dl INTEGER NOT NULL,
            positions INTEGER[] NOT NULL,
            PRIMARY KEY (store_rid, token, chunk_id) INCLUDE (tf, dl)
        )""",
        """CREATE TABLE cs_terms (
            store_rid BIGINT NOT NULL,
            token TEXT COLLATE "C" NOT NULL,
            df INTEGER NOT NULL,
            PRIMARY KEY (store_rid, token)
        )""",
    ),
    # Every add changes the counts of about as many terms as the item has distinct
    # tokens: with room left on each page, the new row version stays on its page (a
    # HOT update: no new key in the primary key). Measured: ingest 1.1x as fast. Pages
    # written before keep their fill until rewritten.
    ("ALTER TABLE cs_terms SET (fillfactor = 50)",),
    _MIGRATION_3,
    _MIGRATION_4,
)
"""The schema, one tuple of statements per version (see `Database`)."""

INDEX_COMPONENT: Final = "content-store.index"
"""The tokenizer's version in the schema-version table: `INDEX_VERSION`, shared with
the SQLite index (both hold tokens of the same rewrite)."""


def check_index(conn: Any) -> None:
    """Re-index a database whose tokens another tokenizer version made (runs in the
    migration's transaction, under its lock)."""
    current = read_version(conn, INDEX_COMPONENT)
    if current is not None and current != INDEX_VERSION:
        _reindex(conn)
    if current != INDEX_VERSION:
        write_version(conn, INDEX_COMPONENT, INDEX_VERSION)
    # What a process stopped before merging (and, after the upgrade to blocks, every
    # chunk) is sealed now, once, by the first process to start.
    merge_all(conn)


def _reindex(conn: Any) -> None:
    """Rebuild every chunk's tokens and length and the stores' token totals from the
    stored chunk texts (the tokenizer changed), in the caller's transaction; the blocks
    are dropped, every chunk left pending (`merge_all` seals them)."""
    conn.execute("DELETE FROM cs_block_postings")
    conn.execute("DELETE FROM cs_blocks")
    conn.execute("UPDATE cs_stores SET merged = 0, token_total = 0, blocks = 0")
    conn.execute(
        "CREATE TEMP TABLE cs_reindex (id BIGINT PRIMARY KEY, length INTEGER NOT NULL,"
        " tokens TEXT NOT NULL) ON COMMIT DROP"
    )
    with conn.cursor(name="nativemcp_reindex") as cursor:
        cursor.execute("SELECT id, body FROM cs_chunks ORDER BY id")
        while batch := cursor.fetchmany(INSERT_BATCH):
            rows = "".join(
                f"{chunk_id}\t{len(tokens)}\t{token_text(tokens)}\n"
                for chunk_id, tokens in ((chunk_id, fast_tokens(body)) for chunk_id, body in batch)
            )
            with conn.cursor().copy("COPY cs_reindex (id, length, tokens) FROM STDIN") as copy:
                copy.write(rows.encode("utf-8"))
    conn.execute(
        "UPDATE cs_chunks c SET length = r.length, tokens = r.tokens FROM cs_reindex r"
        " WHERE c.id = r.id"
    )
    conn.execute(
        "UPDATE cs_stores s SET token_total = t.total FROM (SELECT store_rid,"
        " sum(length) AS total FROM cs_chunks GROUP BY store_rid) AS t WHERE s.rid = t.store_rid"
    )
