-- Optional encryption of tool-call payloads (issue 19; agentx_memory/crypto.py): the id of the key that sealed a
-- row's tool_input, tool_output and error_message (AES-256-GCM, application side). NULL: the row is plaintext.
-- Sealed, tool_input and tool_output hold a JSON string (base64 of nonce and ciphertext) and error_message the same
-- text; the columns keep their types so plaintext and sealed rows live side by side while keys rotate.
ALTER TABLE tool_invocations ADD COLUMN IF NOT EXISTS encrypted_with VARCHAR(32);
CREATE INDEX IF NOT EXISTS idx_tools_encrypted_with ON tool_invocations (encrypted_with, id);
