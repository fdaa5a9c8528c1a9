package backends

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/store"
)

// Postgres is one PostgreSQL 15 server (Debian's, on its own image) locked
// with advisory locks: pg_advisory_lock on a dedicated session, or
// pg_advisory_xact_lock in an open transaction (--pg-lock). The token comes
// from a sequence, committed right after the grant. It can also keep the
// protected value (--store postgres), each write in the transaction that
// holds the lock.
type Postgres struct{}

const (
	pgNode = "postgres"
	pgPort = 5432
	// pgbouncerPort is where the pgbouncer-session variant's pooler
	// listens, in the server's container.
	pgbouncerPort = 6432
	// pgbouncerPool is the pooler's server connections: one, so that
	// every client's statements run on one server session, which takes
	// the advisory lock for the first client and, re-entrant, for every
	// other at once: two holders in every run, without a fault. With more,
	// whether a second client lands on the holding session is a matter of
	// timing (a client routed to another session waits as it should).
	pgbouncerPool = 1
)

// pgSettings are the server settings a run's TTL and --pg-idle-timeout
// map to, which Ready reads back over TCP (keepalive settings read as 0
// on a Unix socket) and test.json keeps.
var pgSettings = []string{"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout",
	"idle_session_timeout", "idle_in_transaction_session_timeout"}

// Name implements Backend.
func (Postgres) Name() string { return "postgres" }

// About implements Backend.
func (Postgres) About() string { return "one PostgreSQL 15, advisory locks" }

// Tokens implements Backend.
func (Postgres) Tokens() bool { return true }

// Locks implements Backend.
func (Postgres) Locks() bool { return true }

// psql runs one query against the local server over TCP.
func psql(query string) []string {
	return []string{"psql", "-h", "127.0.0.1", "-U", "postgres", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", query}
}

// Layout implements Backend. The server runs as PID 1 so that a kill
// takes it down at once, on the data directory the kill left.
func (Postgres) Layout(cfg *config.Config) Layout {
	cmd := []string{"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", images.PostgresBin + "postgres", "-D", images.PostgresData}
	for _, kv := range pgServerConfig(cfg.TTL.D(), cfg.PgIdleTimeout.D()) {
		cmd = append(cmd, "-c", kv)
	}
	probe := psql("SELECT 1")
	port := pgPort
	if cfg.Variant == locks.PgbouncerSession {
		cmd = withPgbouncer(cmd)
		// Through the pooler: it answers once both it and the server do.
		probe = append(psql("SELECT 1"), "-p", fmt.Sprint(pgbouncerPort))
		port = pgbouncerPort
	}
	return Layout{
		Services: []Service{{
			Node:    clusters.Node{Name: pgNode, Role: "postgres", Cmd: cmd},
			Image:   images.Postgres,
			Probe:   probe,
			Version: []string{images.PostgresBin + "postgres", "--version"},
		}},
		Addrs:  []string{fmt.Sprintf("%s:%d", pgNode, port)},
		Shared: true,
		// The settings the server applies to a TCP session.
		Ready: psql("SELECT string_agg(name || '=' || setting || coalesce(unit, ''), ' ' ORDER BY name) FROM pg_settings WHERE name IN ('" +
			strings.Join(pgSettings, "', '") + "')"),
	}
}

// pgbouncerConfig is the pooler of the pgbouncer-session variant: every
// database goes to the local server, in transaction pooling with
// pgbouncerPool server connections. Clients are trusted as the server
// trusts them (the user must still be in auth_file); lock_timeout, a startup
// parameter pgbouncer does not pass on, is ignored rather than refused.
// postgres is an admin user, for SHOW POOLS and SHOW SERVERS on the
// pgbouncer console.
func pgbouncerConfig() string {
	return strings.Join([]string{
		"[databases]",
		fmt.Sprintf("* = host=127.0.0.1 port=%d", pgPort),
		"[pgbouncer]",
		"listen_addr = *",
		fmt.Sprintf("listen_port = %d", pgbouncerPort),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + pgbouncerUsers,
		"admin_users = postgres",
		"pool_mode = transaction",
		fmt.Sprintf("default_pool_size = %d", pgbouncerPool),
		"min_pool_size = 0",
		"reserve_pool_size = 0",
		"max_client_conn = 500",
		"ignore_startup_parameters = lock_timeout,extra_float_digits",
	}, "\n") + "\n"
}

// pgbouncerIni and pgbouncerUsers are the pooler's files, written when its
// container starts.
const (
	pgbouncerIni   = "/tmp/pgbouncer.ini"
	pgbouncerUsers = "/tmp/pgbouncer.users"
)

// withPgbouncer starts the pooler, as the postgres user (pgbouncer refuses
// to run as root), in the background of the server's container, and then
// the server as its PID 1, as without it: a kill of the server still takes
// the container down at once, the pooler with it.
func withPgbouncer(server []string) []string {
	script := `printf '%s' "$1" > ` + pgbouncerIni + ` && printf '"postgres" ""\n' > ` + pgbouncerUsers +
		` && setpriv --reuid=postgres --regid=postgres --init-groups pgbouncer ` + pgbouncerIni + ` & shift; exec "$@"`
	return append([]string{"sh", "-c", script, "sh", pgbouncerConfig()}, server...)
}

// pgServerConfig maps the TTL to the server's detection of a dead peer. A
// session lock has no TTL; what ends the session of a client cut off by
// the network is the kernel's TCP keepalive (the first probe after
// tcp_keepalives_idle of silence, then one every tcp_keepalives_interval,
// the connection dropped after tcp_keepalives_count unanswered) and
// tcp_user_timeout (data the server sent left unacknowledged). With idle =
// interval = 1 s and count = TTL − 1 s, a silent peer is dropped after 1 +
// (TTL − 1) = TTL seconds; tcp_user_timeout is the TTL too. A frozen
// process's kernel still answers keepalives: only idle_session_timeout and
// idle_in_transaction_session_timeout (--pg-idle-timeout, off by default as
// in most deployments) end a session that is merely silent.
//
// fsync is off for the reason etcd runs without it: a killed process loses
// nothing the page cache holds (commits are still written to it), and
// fsync would time the overlay's disk.
func pgServerConfig(ttl, idle time.Duration) []string {
	s := int(ttl / time.Second)
	return []string{
		"listen_addresses=*",
		"unix_socket_directories=/tmp",
		"max_connections=250",
		"shared_buffers=32MB",
		"fsync=off",
		"tcp_keepalives_idle=1",
		"tcp_keepalives_interval=1",
		fmt.Sprintf("tcp_keepalives_count=%d", s-1),
		fmt.Sprintf("tcp_user_timeout=%d", ttl.Milliseconds()),
		fmt.Sprintf("idle_session_timeout=%d", idle.Milliseconds()),
		fmt.Sprintf("idle_in_transaction_session_timeout=%d", idle.Milliseconds()),
	}
}

// Refuses implements Backend.
func (Postgres) Refuses(fault string) string {
	if fault == "clock" {
		return pgClockRefusal
	}
	return ""
}

// pgClockRefusal is why the clock fault means nothing here: nothing that
// ends a session holding an advisory lock early follows the wall clock.
// Measured under the clock shim: a session idle past a 5 s
// idle_session_timeout was ended 5 s after it went idle although the
// server's wall clock jumped an hour forward meanwhile (the timer is a
// setitimer interval; the wall clock is only compared once it fires); an
// hour backwards kept it alive past 8 s, which only holds a lock longer.
const pgClockRefusal = "PostgreSQL ends a lock's session on the kernel's TCP keepalive and user timeout, which no LD_PRELOAD moves, " +
	"and a forward jump of its wall clock does not shorten its idle timeouts (setitimer intervals; measured): the clock can only keep a lock longer"

// Check implements Backend.
func (Postgres) Check(cfg *config.Config) error {
	ttl := cfg.TTL.D()
	if ttl < 2*time.Second || ttl%time.Second != 0 {
		return config.Usage("PostgreSQL's keepalive settings count whole seconds and a TTL maps to 1 s + (TTL − 1 s) of probes: --ttl must be 2s, 3s, …, got %s", ttl)
	}
	keeps := cfg.Store == (Postgres{}).Keeps()
	switch {
	case cfg.Variant == locks.PgbouncerSession && cfg.PgLock != "" && cfg.PgLock != locks.PgSession:
		return config.Usage("--variant %s is a session lock through a transaction pooler: --pg-lock must be session", cfg.Variant)
	case cfg.PgLock == "" && keeps:
		cfg.PgLock = locks.PgXact
	case cfg.PgLock == "":
		cfg.PgLock = locks.PgSession
	case !slices.Contains(locks.PgModes, cfg.PgLock):
		return config.Usage("unknown --pg-lock %q (want one of %s)", cfg.PgLock, strings.Join(locks.PgModes, ", "))
	case keeps && cfg.PgLock != locks.PgXact:
		return config.Usage("with --store postgres each write is in the transaction that holds the lock: --pg-lock must be xact")
	}
	if keeps && cfg.Fence != store.FenceNone {
		return config.Usage("with --store postgres each write commits in the transaction that holds the lock, which is the fence; --fence applies to the lockbench store only")
	}
	idle := cfg.PgIdleTimeout.D()
	if idle < 0 || idle%time.Millisecond != 0 {
		return config.Usage("--pg-idle-timeout counts whole milliseconds, got %s", idle)
	}
	if idle > 0 && idle <= ttl/3 {
		return config.Usage("--pg-idle-timeout %s would end a holder's session between its checks (every TTL/3 = %s): make it longer", idle, ttl/3)
	}
	cfg.Nodes = 0
	return nil
}

// Lease implements Backend: there is no TTL. The lock lives as long as
// the session (or the transaction) holding it, which the server may end at
// any time (its dead-peer detection, an idle timeout, a restart) without
// the holder knowing: a holding is certain only up to the send of the
// last statement that succeeded on its session. A restart ends every
// session at once; the old holder's belief goes stale at its last
// statement, before the restart, so a grant after the restart is a stale
// belief of the old holder, not a broken promise.
func (Postgres) Lease(ttl int64) checkers.Lease {
	return checkers.Lease{TTL: ttl, LastStatement: true}
}

// pgKey is the advisory lock's key for the resource key.
func pgKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte("lockbench/lock/" + key))
	return int64(h.Sum64())
}

// Client implements Backend.
func (Postgres) Client(s Spec, trace locks.Trace, _ locks.Failpoint, _ *rand.Rand) (Client, error) {
	l := locks.NewPostgres(locks.PostgresConfig{Variant: s.Variant,
		URL: "postgres://postgres@" + s.LockAddrs[0] + "/postgres?sslmode=disable", Key: pgKey(s.Key), Owner: s.Process,
		Mode: s.PgLock, TTL: s.TTL.D(), Schema: locks.PostgresSchema + "\n" + store.PostgresSchema,
		// The server gives up the wait a TTL before the client does, so
		// that a wait that times out leaves the session alive.
		LockTimeout: s.AcquireTimeout.D() - s.TTL.D(), Trace: trace,
	})
	c := Client{Lock: l}
	if s.Store == (Postgres{}).Keeps() {
		c.Store = store.NewPostgres(l, s.Epoch)
	}
	return c, nil
}

// Variants implements Mutant.
func (Postgres) Variants() []Variant {
	return []Variant{
		{locks.PgbouncerSession, "pg_advisory_lock and pg_advisory_unlock through a transaction-pooling pgbouncer: the lock belongs to whichever pooled server session ran the statement"},
	}
}

// Failpoints implements Mutant: the PostgreSQL client passes none of its
// own.
func (Postgres) Failpoints() []string { return nil }

// Keeps implements Keeper.
func (Postgres) Keeps() string { return "postgres" }

// StoreLog implements Keeper: the audit table, read back from the server.
func (Postgres) StoreLog(ctx context.Context, ex Execer, _ *config.Config) ([]byte, error) {
	out, err := ex.Exec(ctx, pgNode, psql(store.PostgresLog)...)
	return []byte(out), err
}
