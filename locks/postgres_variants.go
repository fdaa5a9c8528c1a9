package locks

import "github.com/jackc/pgx/v5"

// PgbouncerSession is the session advisory lock of the correct client
// (pg_advisory_lock, then pg_advisory_unlock on the same connection) taken
// through a pgbouncer in pool_mode = transaction, as an application that
// moved behind a transaction pooler keeps doing. pgbouncer's documentation
// (Features, "SQL feature map for pooling modes") lists session-level
// advisory locks as never supported in transaction pooling: each statement
// outside a transaction runs on whichever server connection is free, so the
// lock belongs to the server session that happened to run pg_advisory_lock,
// another client whose statement lands on that session is granted it at
// once (session advisory locks are re-entrant), and pg_advisory_unlock may
// run on another session, return false, and leave the lock held by a pooled
// connection that no client owns.
const PgbouncerSession = "pgbouncer-session"

// pooled prepares a connection to go through a transaction pooler: pgx's
// default extended protocol prepares statements on one server connection
// and runs them on another, which pgbouncer 1.18 does not support, so every
// query goes as simple protocol text (arguments quoted by pgx).
// lock_timeout is not a startup parameter the pooler passes on (it
// tracks only a few, such as application_name): the pooler is told to ignore
// it (see backends), so the client's own deadline bounds a wait.
func pooled(cc *pgx.ConnConfig) {
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	delete(cc.RuntimeParams, "lock_timeout")
}
