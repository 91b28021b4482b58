-- Tool invocations pending projection (issue 11, item 15).
--
-- A tool call is durable once its tool_invocations row commits; the graph (ToolInvocation, USED_TOOL, INVOKED) is a
-- projection of it, as for turns. With the graph unreachable, record_invocation now succeeds and leaves the row
-- unprojected; reconcile() projects it later. Rows logged before this migration may have missed the graph (an
-- outage raised after the commit), so every one of them goes through reconcile once (MERGE by id: harmless).
ALTER TABLE tool_invocations ADD COLUMN IF NOT EXISTS projected BOOLEAN NOT NULL DEFAULT FALSE;

CREATE INDEX IF NOT EXISTS idx_tools_unprojected ON tool_invocations (id) WHERE NOT projected;
