-- Baton database schema, version 11.
--
-- This file is the single source of truth: `baton` embeds it at build time and applies
-- exactly this text, in one transaction, to a new database (Sources/BatonStore/Schema.swift).
-- A test proves that a fresh database's sqlite_master matches what this text creates.
-- A version-1 to -10 database is migrated in place at open
-- (Sources/BatonStore/SchemaMigration.swift): the tables whose CHECKs changed are rebuilt from
-- these very CREATE statements and new tables created, so a migrated database has exactly this
-- schema too (docs/design.md, "Schema versions").
--
-- Times are INTEGER milliseconds since the Unix epoch (UTC).
-- Tokens are never stored: only their SHA-256 (32 bytes). See docs/design.md.

PRAGMA user_version = 11;

-- Accounts. Passwords are argon2id-encoded strings ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    username      TEXT    NOT NULL UNIQUE COLLATE NOCASE,  -- ASCII names; "Alice" is "alice"
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    password_changed_at INTEGER NOT NULL,
    disabled_at   INTEGER
) STRICT;

-- One row per login (R1). The row holds the chain's head, so every rule is decided from
-- O(1) state: the head's generation and hash, and whether it was ever presented (R3a).
-- id is a random positive 63-bit number; tokens carry it under a MAC.
-- auth_time: the last active authentication (login, or the last successful /v1/confirm or
-- /v1/password); exchanges keep it (RFC 9470 step-up). confirm_failures: wrong passwords
-- presented by this chain since then; the 5th revokes the chain (confirm_failed).
-- jkt: the RFC 7638 thumbprint (base64url SHA-256, 43 characters) of the key the chain is bound
-- to by its login's DPoP proof (RFC 9449); NULL for a bearer chain. Set once. Version 6.
-- head_key: the token key (token_keys.id) the head was made with; 0 is the key file's own
-- key (every chain made before version 8). Version 8.
-- last_used_at, last_used_ip, last_used_user_agent: the chain's last use (its newest login,
-- exchange, lost-response retry or step-up: SessionActivity.useKinds), with the client address
-- and User-Agent of that request; set by the transaction that writes its audit event, so
-- "your devices" reads one row however many other events the chain has. A migrated chain gets
-- them from its newest such audit event (NULL when none is left). Version 9.
-- head_attempt: the number of the exchange attempt (X-Baton-Exchange-Attempt) that made the
-- head; NULL for a login's head and for an exchange whose client sent no number. A late attempt
-- of the same exchange numbered no higher is answered without touching the head (R3b). Version 10.
CREATE TABLE chains (
    id               INTEGER PRIMARY KEY,
    user_id          INTEGER NOT NULL REFERENCES users(id),
    device_id        TEXT    NOT NULL,
    device_class     TEXT    NOT NULL
                     CHECK (device_class IN ('mobile', 'desktop', 'web', 'other')),
    device_name      TEXT,
    created_at       INTEGER NOT NULL,
    head_generation  INTEGER NOT NULL CHECK (head_generation >= 0),
    head_hash        BLOB    NOT NULL CHECK (length(head_hash) = 32),
    head_issued_at   INTEGER NOT NULL,
    head_expires_at  INTEGER NOT NULL,
    head_presented   INTEGER NOT NULL DEFAULT 0 CHECK (head_presented IN (0, 1)),
    last_exchange_at INTEGER,
    auth_time        INTEGER NOT NULL,
    confirm_failures INTEGER NOT NULL DEFAULT 0 CHECK (confirm_failures >= 0),
    revoked_at       INTEGER,
    revoked_reason   TEXT
                     CHECK (revoked_reason IN ('reuse_detected', 'fork_detected', 'logout',
                            'evicted', 'logged_in_elsewhere', 'password_changed',
                            'user_disabled', 'admin', 'confirm_failed', 'signed_out',
                            'key_retired')),
    jkt              TEXT    CHECK (jkt IS NULL OR length(jkt) = 43),
    head_key         INTEGER NOT NULL DEFAULT 0 CHECK (head_key >= 0),
    last_used_at     INTEGER,
    last_used_ip     TEXT,
    last_used_user_agent TEXT,
    head_attempt     INTEGER CHECK (head_attempt IS NULL OR head_attempt >= 1),
    CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL))
) STRICT;

-- R7: the live chains of a user, oldest first (eviction, one chain per device class).
CREATE INDEX chains_unrevoked_by_user ON chains(user_id, created_at) WHERE revoked_at IS NULL;

-- The lineage: every token of a chain that is no longer its head, with how it ended.
-- 'exchanged' (R2): consumed by an exchange, whose ip/user agent/device are kept so that
-- a later reuse (R3) can report both sides. 'replaced' (R3a): an unused head revoked by a
-- lost-response retry; presenting it again is a fork (R4).
-- Keyed by (chain, generation, hash): a presented token is found by the generation its
-- MAC-protected body names, then compared by hash in constant time.
CREATE TABLE tokens (
    chain_id   INTEGER NOT NULL REFERENCES chains(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    hash       BLOB    NOT NULL CHECK (length(hash) = 32),
    issued_at  INTEGER NOT NULL,
    ended_at   INTEGER NOT NULL,
    ended_by   TEXT    NOT NULL CHECK (ended_by IN ('exchanged', 'replaced')),
    ip         TEXT,
    user_agent TEXT,
    device_id  TEXT,
    PRIMARY KEY (chain_id, generation, hash)
) STRICT, WITHOUT ROWID;

-- Every login, exchange, reuse, revocation and account change, written in the same
-- transaction as the state change it describes. detail is a JSON object.
CREATE TABLE audit (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    kind       TEXT    NOT NULL
               CHECK (kind IN ('login_succeeded', 'login_failed', 'login_throttled',
                      'exchanged', 'exchange_retried', 'reuse_detected', 'fork_detected',
                      'chain_revoked', 'user_created', 'user_disabled', 'user_enabled',
                      'password_changed', 'step_up_succeeded', 'step_up_failed',
                      'key_recorded', 'key_replaced', 'proof_failed', 'key_rotated',
                      'key_retired')),
    user_id    INTEGER,
    username   TEXT,
    chain_id   INTEGER,
    generation INTEGER,
    ip         TEXT,
    user_agent TEXT,
    device_id  TEXT,
    detail     TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
) STRICT;

CREATE INDEX audit_by_chain ON audit(chain_id) WHERE chain_id IS NOT NULL;
CREATE INDEX audit_by_user ON audit(user_id) WHERE user_id IS NOT NULL;

-- The fingerprint of the key that signs this database's tokens (docs/admin.md, "The key
-- file"): HMAC-SHA-256 of the label 'baton key fingerprint v1' under the key, 64 hex digits;
-- never the key. Written when the database gets its key, compared at every start, replaced
-- only by `baton serve --new-key` (audited key_replaced). One row at most. Version 3.
CREATE TABLE key_fingerprint (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint TEXT    NOT NULL CHECK (length(fingerprint) = 64),
    recorded_at INTEGER NOT NULL
) STRICT;

-- The token key ring (docs/design.md, "The token key ring"): the keys that make and check
-- tokens. Row 0 stands for the key file's own key (wrapped NULL: the file holds it), written
-- by the first `baton admin key rotate` with the time key_fingerprint was recorded; rows 1
-- and up are random keys wrapped under a key derived from the key file's (80 bytes: nonce,
-- sealed key, tag), so this table alone holds nothing usable. The newest row not retired makes
-- new tokens; a retired key's tokens are refused. Version 8.
CREATE TABLE token_keys (
    id          INTEGER PRIMARY KEY CHECK (id >= 0),
    wrapped     BLOB    CHECK ((id = 0) = (wrapped IS NULL) AND (wrapped IS NULL OR length(wrapped) = 80)),
    fingerprint TEXT    NOT NULL CHECK (length(fingerprint) = 64),
    created_at  INTEGER NOT NULL,
    retired_at  INTEGER
) STRICT;

-- The devices each user has logged in from, so a login from a new one is reported
-- (`login.new_device`, docs/webhooks.md). Version 5; a migrated database gets its chains'
-- devices, so an upgrade reports no known device as new.
CREATE TABLE known_devices (
    user_id    INTEGER NOT NULL REFERENCES users(id),
    device_id  TEXT    NOT NULL,
    first_seen INTEGER NOT NULL,
    PRIMARY KEY (user_id, device_id)
) STRICT, WITHOUT ROWID;

-- The webhook outbox (docs/webhooks.md): each security event, written by the transaction that
-- made the change it reports, with the exact body every delivery attempt signs. id is the
-- order of delivery (AUTOINCREMENT: never reused). message_id is the `webhook-id`. Version 5.
CREATE TABLE webhook_outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT    NOT NULL UNIQUE,
    type       TEXT    NOT NULL,
    at         INTEGER NOT NULL,
    body       TEXT    NOT NULL CHECK (json_valid(body))
) STRICT;
CREATE INDEX webhook_outbox_by_time ON webhook_outbox(at);

-- Each endpoint, by URL: the types it takes (`event_types`, a comma list: the outbox's writers
-- queue an event in webhook_deliveries for each endpoint that takes it) and its counters.
-- Version 5. `cursor`, `attempts`, `next_attempt_at`, `first_failed_at`, `lease_id` and
-- `lease_until` held version 5's in-order delivery (one event at a time per endpoint); unused
-- since version 7, where each pending event has its own state.
CREATE TABLE webhook_endpoints (
    url             TEXT    PRIMARY KEY,
    cursor          INTEGER NOT NULL,
    event_types     TEXT    NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    first_failed_at INTEGER,
    last_error      TEXT,
    last_error_at   INTEGER,
    delivered       INTEGER NOT NULL DEFAULT 0,
    failed          INTEGER NOT NULL DEFAULT 0,
    lease_id        TEXT,
    lease_until     INTEGER
) STRICT;

-- The DPoP proofs (RFC 9449) of bound chains' state-changing requests (exchange, logout,
-- step-up, password, sign-outs), each kept until its proof could no longer be accepted
-- (docs/dpop.md, "The replay cache"): such a proof is accepted once across every instance and
-- across restarts, which each process's in-memory replay cache cannot promise. digest:
-- SHA-256 of the key's thumbprint and the proof's jti. Expired rows go a few at a time with
-- each new one. Version 6.
CREATE TABLE proof_replays (
    digest     BLOB    PRIMARY KEY CHECK (length(digest) = 32),
    keep_until INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX proof_replays_by_expiry ON proof_replays(keep_until);

-- Each event still to be sent to an endpoint, written by the transaction that writes the
-- outbox row (for every endpoint whose event_types take it) and deleted once the event is
-- delivered or given up (docs/webhooks.md, "Delivery"). Each event is retried on its own
-- schedule, so one a receiver refuses holds back no other. `alert`: 1 for the security alerts
-- (reuse, fork, revocations, account changes), sent by a thread of their own ahead of the bulk
-- events (0: device.proof_rejected, login.new_device). `due_at`: when the next attempt may
-- start; 0 for an event never tried, so fresh events go first, in id order; a claim moves it
-- to the end of its lease (`lease_id`). Delivery reads only this index, never the outbox's
-- backlog. Version 7.
CREATE TABLE webhook_deliveries (
    endpoint        TEXT    NOT NULL,
    event_id        INTEGER NOT NULL,
    alert           INTEGER NOT NULL CHECK (alert IN (0, 1)),
    due_at          INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    first_failed_at INTEGER,
    lease_id        TEXT,
    PRIMARY KEY (event_id, endpoint)
) STRICT, WITHOUT ROWID;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint, alert, due_at, event_id);

-- Identity providers whose tokens POST /v1/token-exchange accepts (RFC 8693; docs/identity.md),
-- as `baton admin issuer add` records them: shared by every instance, read per exchange.
-- name: the operator's short name; issuer: the exact `iss`; settings: a JSON object (token
-- type, audiences, algorithms, a static JWK Set, CA certificates, new-user policy, bounds).
-- Version 11.
CREATE TABLE identity_issuers (
    name       TEXT    PRIMARY KEY,
    issuer     TEXT    NOT NULL UNIQUE,
    settings   TEXT    NOT NULL CHECK (json_valid(settings)),
    created_at INTEGER NOT NULL
) STRICT;

-- The identities linked to accounts: an issuer's `iss` and `sub` (never an email), made by a
-- first login through an issuer that creates accounts, or by `baton admin identity link`.
-- Keyed by `iss`, not the issuer's name: removing and re-adding an issuer keeps its links.
-- Version 11.
CREATE TABLE identity_links (
    issuer     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    user_id    INTEGER NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;
CREATE INDEX identity_links_by_user ON identity_links (user_id);
