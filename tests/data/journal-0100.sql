-- The journal schema as monad made it before journal/migrations.py (migrations 0001_events,
-- 0002_tool_calls_approvals_tool_sets, 0100_tasks): sqlite_master, in creation order.
CREATE TABLE migrations (
	name VARCHAR NOT NULL, 
	applied_at FLOAT NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE events (
	id INTEGER NOT NULL, 
	ts FLOAT NOT NULL, 
	server VARCHAR, 
	kind VARCHAR NOT NULL, 
	state VARCHAR, 
	reason VARCHAR, 
	detail VARCHAR, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_events_server ON events (server);
CREATE INDEX ix_events_ts ON events (ts);
CREATE TABLE tool_calls (
	id INTEGER NOT NULL, 
	ts FLOAT NOT NULL, 
	server VARCHAR NOT NULL, 
	tool VARCHAR NOT NULL, 
	exposed VARCHAR NOT NULL, 
	args_digest VARCHAR NOT NULL, 
	via VARCHAR NOT NULL, 
	decision VARCHAR, 
	decided_by VARCHAR, 
	outcome VARCHAR NOT NULL, 
	duration_ms FLOAT, 
	error VARCHAR, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_tool_calls_ts ON tool_calls (ts);
CREATE INDEX ix_tool_calls_server ON tool_calls (server);
CREATE TABLE approvals (
	id INTEGER NOT NULL, 
	server VARCHAR NOT NULL, 
	definition_hash VARCHAR NOT NULL, 
	tool VARCHAR NOT NULL, 
	created FLOAT NOT NULL, 
	decided_by VARCHAR NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_approvals_server ON approvals (server);
CREATE TABLE tool_sets (
	server VARCHAR NOT NULL, 
	hash VARCHAR NOT NULL, 
	tools VARCHAR NOT NULL, 
	seen FLOAT NOT NULL, 
	PRIMARY KEY (server, hash)
);
CREATE TABLE tasks (
	id VARCHAR NOT NULL, 
	server VARCHAR NOT NULL, 
	tool VARCHAR NOT NULL, 
	arguments VARCHAR, 
	correlation VARCHAR, 
	task_id VARCHAR, 
	state VARCHAR NOT NULL, 
	status_message VARCHAR, 
	created_at FLOAT NOT NULL, 
	updated_at FLOAT NOT NULL, 
	terminal_at FLOAT, 
	server_created_at VARCHAR, 
	ttl_ms INTEGER, 
	poll_interval_ms INTEGER, 
	result VARCHAR, 
	error VARCHAR, 
	input_requests VARCHAR, 
	answered_keys VARCHAR, 
	delivery_pending BOOLEAN NOT NULL, 
	pending_kind VARCHAR, 
	deliveries INTEGER NOT NULL, 
	delivered_at FLOAT, 
	cancel_requested BOOLEAN NOT NULL, 
	recoveries INTEGER NOT NULL, 
	retries INTEGER NOT NULL, 
	submitted BOOLEAN NOT NULL, 
	adopted BOOLEAN NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_tasks_state ON tasks (state);
CREATE INDEX ix_tasks_server ON tasks (server);
CREATE INDEX ix_tasks_delivery_pending ON tasks (delivery_pending);
CREATE INDEX ix_tasks_created_at ON tasks (created_at);
CREATE INDEX ix_tasks_terminal_at ON tasks (terminal_at);
CREATE INDEX ix_tasks_task_id ON tasks (task_id);
