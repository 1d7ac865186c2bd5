-- The schema a fresh database had on main d49cf14 (before issue 47 item 4), kept to test that such a database opens.
CREATE TABLE replay (
     key TEXT PRIMARY KEY,
     chain_id INTEGER NOT NULL,
     attester TEXT NOT NULL,
     nonce TEXT NOT NULL,
     deadline INTEGER NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms INTEGER NOT NULL
   , raw_tx TEXT, wallet TEXT, tx_nonce INTEGER);
CREATE UNIQUE INDEX replay_live_nonce_v2 ON replay (chain_id, attester, nonce)
     WHERE state IN ('checked', 'signed', 'sent', 'mined');
CREATE INDEX replay_open ON replay (state, created_at_ms);
CREATE INDEX replay_deadline ON replay (deadline);
CREATE TABLE accounts (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL UNIQUE,
     plan TEXT NOT NULL,
     created_at_ms INTEGER NOT NULL,
     updated_at_ms INTEGER NOT NULL
   , display_name TEXT);
CREATE TABLE challenges (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL,
     chain_id INTEGER NOT NULL,
     nonce TEXT NOT NULL,
     message TEXT NOT NULL,
     created_at_ms INTEGER NOT NULL,
     expires_at_ms INTEGER NOT NULL,
     used_at_ms INTEGER
   , client_key TEXT);
CREATE INDEX challenges_expiry ON challenges (expires_at_ms);
CREATE TABLE sessions (
     token_hash TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     created_at_ms INTEGER NOT NULL,
     expires_at_ms INTEGER NOT NULL,
     revoked_at_ms INTEGER
   , wallet_provider_id TEXT, execution_mode TEXT);
CREATE INDEX sessions_expiry ON sessions (expires_at_ms);
CREATE TABLE sponsored_writes (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     year INTEGER NOT NULL,
     fingerprint TEXT NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms INTEGER NOT NULL,
     updated_at_ms INTEGER NOT NULL
   , raw_tx TEXT, wallet TEXT, tx_nonce INTEGER);
CREATE INDEX sponsored_writes_usage ON sponsored_writes (account_id, year, state);
CREATE INDEX sponsored_writes_state ON sponsored_writes (state, created_at_ms);
CREATE INDEX challenges_client ON challenges (client_key, created_at_ms);
CREATE INDEX challenges_wallet ON challenges (address, created_at_ms);
CREATE TABLE subjects (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       canonical_did TEXT NOT NULL,
       subject_did_hash TEXT NOT NULL,
       display_name TEXT,
       is_default INTEGER NOT NULL,
       bootstrap INTEGER NOT NULL,
       ownership_method TEXT NOT NULL,
       ownership_wallet_did TEXT NOT NULL,
       verified_at_ms INTEGER NOT NULL,
       created_at_ms INTEGER NOT NULL,
       UNIQUE (account_id, canonical_did)
     );
CREATE INDEX subjects_account ON subjects (account_id, created_at_ms);
CREATE UNIQUE INDEX subjects_one_default ON subjects (account_id) WHERE is_default = 1;
CREATE TABLE deployment_secrets (name TEXT PRIMARY KEY, secret BLOB NOT NULL);
CREATE TABLE relay_gas (window_start_ms INTEGER PRIMARY KEY, gas_used TEXT NOT NULL);
CREATE TABLE relay_gas_shares (window_start_ms INTEGER NOT NULL, key TEXT NOT NULL, gas_used TEXT NOT NULL,
             PRIMARY KEY (window_start_ms, key));
CREATE TABLE private_relay_gas (window_start_ms INTEGER PRIMARY KEY, gas_used TEXT NOT NULL);
CREATE TABLE private_relay_gas_shares (window_start_ms INTEGER NOT NULL, key TEXT NOT NULL, gas_used TEXT NOT NULL,
             PRIMARY KEY (window_start_ms, key));
CREATE TABLE factory_calls (
    chain_id INTEGER NOT NULL, wallet TEXT NOT NULL, factory TEXT NOT NULL, calldata_hash TEXT NOT NULL,
    state TEXT NOT NULL, tx_hash TEXT, gas_used TEXT, created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (chain_id, wallet));
CREATE TABLE tx_replacements (
    book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL, wallet TEXT NOT NULL,
    tx_nonce INTEGER NOT NULL, created_at_ms INTEGER NOT NULL, PRIMARY KEY (book, id, tx_hash));
CREATE TABLE premium_reads (
    account_id TEXT NOT NULL, year INTEGER NOT NULL, used INTEGER NOT NULL, PRIMARY KEY (account_id, year));
CREATE TABLE webhook_outbox (
       seq INTEGER PRIMARY KEY AUTOINCREMENT,
       chain_id INTEGER NOT NULL,
       eas TEXT NOT NULL,
       kind TEXT NOT NULL,
       uid TEXT NOT NULL,
       block_number INTEGER NOT NULL,
       tx_hash TEXT
     );
CREATE TABLE webhook_marks (
       name TEXT PRIMARY KEY,
       block_number INTEGER NOT NULL
     );
CREATE TABLE webhook_endpoints (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       url TEXT NOT NULL,
       events TEXT NOT NULL,
       subjects TEXT NOT NULL,
       own_subjects INTEGER NOT NULL,
       secret TEXT NOT NULL,
       previous_secret TEXT,
       previous_secret_until_ms INTEGER,
       disabled INTEGER NOT NULL DEFAULT 0,
       failing_since_ms INTEGER,
       created_at_ms INTEGER NOT NULL
     );
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at_ms);
CREATE TABLE webhook_subjects (
       endpoint_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       subject_did TEXT NOT NULL,
       PRIMARY KEY (endpoint_id, subject_did)
     );
CREATE INDEX webhook_subjects_did ON webhook_subjects (subject_did);
CREATE INDEX subjects_canonical_did ON subjects (canonical_did);
CREATE TABLE webhook_messages (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       created_at_ms INTEGER NOT NULL
     );
CREATE TABLE webhook_deliveries (
       id TEXT PRIMARY KEY,
       message_id TEXT NOT NULL,
       endpoint_id TEXT NOT NULL,
       state TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_status INTEGER,
       next_attempt_at_ms INTEGER,
       delivered_at_ms INTEGER,
       failed_at_ms INTEGER,
       created_at_ms INTEGER NOT NULL,
       lease_holder TEXT,
       lease_until_ms INTEGER
     );
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at_ms);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at_ms, id);
CREATE INDEX webhook_deliveries_message ON webhook_deliveries (message_id);
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_until_ms) WHERE lease_until_ms IS NOT NULL;
CREATE INDEX webhook_messages_created ON webhook_messages (created_at_ms);
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, state, next_attempt_at_ms, created_at_ms, id);
CREATE TABLE signing_keys (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       key_did TEXT NOT NULL,
       key_type TEXT NOT NULL CHECK (key_type IN ('attestation', 'service-signing')),
       display_name TEXT NOT NULL,
       tags TEXT NOT NULL,
       notes TEXT,
       created_at_ms INTEGER NOT NULL,
       updated_at_ms INTEGER NOT NULL,
       UNIQUE (account_id, key_did)
     );
CREATE INDEX signing_keys_account ON signing_keys (account_id, created_at_ms);
CREATE TABLE x402_payments (
       key TEXT PRIMARY KEY,
       purpose TEXT NOT NULL,
       network TEXT NOT NULL,
       asset TEXT NOT NULL,
       payer TEXT NOT NULL,
       pay_to TEXT NOT NULL,
       amount TEXT NOT NULL,
       account_id TEXT,
       state TEXT NOT NULL,
       work_ref TEXT,
       settlement_tx TEXT,
       failure_reason TEXT,
       period_start_ms INTEGER,
       period_end_ms INTEGER,
       created_at_ms INTEGER NOT NULL,
       updated_at_ms INTEGER NOT NULL
     , valid_before INTEGER);
CREATE INDEX x402_payments_account ON x402_payments (account_id, period_end_ms);
CREATE INDEX x402_payments_state ON x402_payments (state, created_at_ms);
CREATE INDEX x402_payments_payer ON x402_payments (payer, asset, network, state);
CREATE TABLE oauth_clients (
       client_id TEXT PRIMARY KEY,
       account_id TEXT,
       secret_hash TEXT,
       name TEXT,
       redirect_uris TEXT NOT NULL,
       grant_types TEXT NOT NULL,
       scope TEXT NOT NULL,
       auth_method TEXT NOT NULL,
       registered_by TEXT,
       created_at_ms INTEGER NOT NULL,
       granted_at_ms INTEGER
     );
CREATE INDEX oauth_clients_account ON oauth_clients (account_id, created_at_ms);
CREATE INDEX oauth_clients_registered ON oauth_clients (registered_by, created_at_ms);
CREATE INDEX oauth_clients_open ON oauth_clients (created_at_ms) WHERE account_id IS NULL;
CREATE TABLE oauth_codes (
       code_hash TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       redirect_uri TEXT NOT NULL,
       scope TEXT NOT NULL,
       code_challenge TEXT NOT NULL,
       resource TEXT,
       created_at_ms INTEGER NOT NULL,
       expires_at_ms INTEGER NOT NULL,
       used_at_ms INTEGER,
       grant_id TEXT
     , redirect_uri_omitted INTEGER);
CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at_ms);
CREATE INDEX oauth_codes_client ON oauth_codes (client_id);
CREATE INDEX oauth_codes_account ON oauth_codes (account_id, client_id);
CREATE TABLE oauth_grants (
       id TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       scope TEXT NOT NULL,
       resource TEXT,
       created_at_ms INTEGER NOT NULL,
       revoked_at_ms INTEGER
     );
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
CREATE INDEX oauth_grants_account ON oauth_grants (account_id, client_id);
CREATE TABLE oauth_refresh_tokens (
       token_hash TEXT PRIMARY KEY,
       grant_id TEXT NOT NULL,
       created_at_ms INTEGER NOT NULL,
       expires_at_ms INTEGER NOT NULL,
       used_at_ms INTEGER
     );
CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);
CREATE INDEX oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expires_at_ms);
CREATE TABLE oauth_revoked_tokens (
       jti TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       expires_at_ms INTEGER NOT NULL
     );
CREATE TABLE oauth_signing_keys (
       kid TEXT PRIMARY KEY,
       private_jwk TEXT NOT NULL,
       public_jwk TEXT NOT NULL,
       created_at_ms INTEGER NOT NULL
     );
CREATE TABLE rate_buckets (
    scope TEXT NOT NULL, key TEXT NOT NULL, tokens REAL NOT NULL, at_ms INTEGER NOT NULL, full_at_ms REAL NOT NULL,
    allowed INTEGER NOT NULL, PRIMARY KEY (scope, key));
CREATE INDEX rate_buckets_full ON rate_buckets (full_at_ms);
CREATE TABLE mcp_sessions (
    id TEXT PRIMARY KEY, created_at_ms INTEGER NOT NULL, used_at_ms INTEGER NOT NULL, used_seq INTEGER NOT NULL);
CREATE INDEX mcp_sessions_used ON mcp_sessions (used_seq);
CREATE INDEX mcp_sessions_idle ON mcp_sessions (used_at_ms);
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, state TEXT NOT NULL,
  status INTEGER, headers TEXT, body TEXT,
  created_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL, lease_until_ms BIGINT NOT NULL, submission_id TEXT,
  PRIMARY KEY (scope, key));
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at_ms);
CREATE TABLE submission_records (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, ref TEXT NOT NULL, state TEXT NOT NULL,
    tx_hash TEXT, uid TEXT, block_number TEXT, error TEXT, fee_bumps INTEGER NOT NULL DEFAULT 0,
    created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL, items TEXT, item_uids TEXT, untold INTEGER);
CREATE INDEX submission_records_scope ON submission_records (scope, created_at_ms DESC, id DESC);
CREATE INDEX submission_records_ref ON submission_records (ref) WHERE state = 'open';
CREATE INDEX submission_records_open ON submission_records (created_at_ms) WHERE state = 'open';
CREATE INDEX submission_records_untold ON submission_records (created_at_ms) WHERE untold = 1;
CREATE TABLE index_attestations (
       chain_id INTEGER NOT NULL,
       eas TEXT NOT NULL,
       uid TEXT NOT NULL,
       recipient TEXT NOT NULL,
       attester TEXT NOT NULL,
       schema_uid TEXT NOT NULL,
       block_number INTEGER NOT NULL,
       log_index INTEGER NOT NULL,
       revoked_block INTEGER, time TEXT, expiration_time TEXT, revocation_time TEXT, ref_uid TEXT, revocable INTEGER, data TEXT, tail INTEGER NOT NULL DEFAULT 0, time_seconds INTEGER, tx_hash TEXT, revoked_tx_hash TEXT, subject TEXT,
       PRIMARY KEY (chain_id, eas, uid)
     );
CREATE INDEX index_attestations_recipient
       ON index_attestations (chain_id, eas, recipient, schema_uid, block_number, log_index);
CREATE INDEX index_attestations_block ON index_attestations (chain_id, eas, block_number);
CREATE TABLE index_checkpoints (
       chain_id INTEGER NOT NULL,
       eas TEXT NOT NULL,
       block_number INTEGER NOT NULL,
       block_hash TEXT NOT NULL, block_time INTEGER,
       PRIMARY KEY (chain_id, eas, block_number)
     );
CREATE TABLE index_lease (
       name TEXT PRIMARY KEY,
       holder TEXT NOT NULL,
       expires_at_ms INTEGER NOT NULL
     );
CREATE TABLE index_polls (
       name TEXT PRIMARY KEY,
       checked_at_ms INTEGER NOT NULL,
       chain_head INTEGER NOT NULL
     );
CREATE INDEX index_attestations_revoked_at ON index_attestations (chain_id, eas, (COALESCE(revoked_block, -1)));
CREATE INDEX index_attestations_recipient_order
     ON index_attestations (chain_id, eas, recipient, block_number, log_index);
CREATE INDEX index_attestations_attester
     ON index_attestations (chain_id, eas, attester, block_number, log_index);
CREATE INDEX index_attestations_schema
     ON index_attestations (chain_id, eas, schema_uid, block_number, log_index);
CREATE INDEX index_attestations_time ON index_attestations (chain_id, eas, time_seconds, block_number);
CREATE INDEX index_attestations_subject
     ON index_attestations (chain_id, eas, subject, recipient, schema_uid, block_number, revoked_block);
CREATE INDEX index_attestations_tail ON index_attestations (chain_id, eas, block_number) WHERE tail = 1;
