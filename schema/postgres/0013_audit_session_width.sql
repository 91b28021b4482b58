-- Issue 19: every audit entry of an operation that has a session carries it in session_id, and a conversation is a
-- session (agentx_memory/audit.py). Conversation ids have up to 200 characters (VARCHAR(200) everywhere), so
-- session_id gets the same width: a longer id would otherwise fail the audit insert and lose the entry. Widening a
-- VARCHAR rewrites neither the partitions nor idx_audit_session.
ALTER TABLE memory_audit_log ALTER COLUMN session_id TYPE VARCHAR(200);
