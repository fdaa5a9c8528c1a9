package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL advisory lock modes (--pg-lock).
const (
	// PgSession holds pg_advisory_lock on a dedicated connection until
	// pg_advisory_unlock or the end of the session.
	PgSession = "session"
	// PgXact holds pg_advisory_xact_lock in an open transaction until it
	// commits or rolls back.
	PgXact = "xact"
)

// PgModes are the modes --pg-lock takes, the default first.
var PgModes = []string{PgSession, PgXact}

// PostgresSchema creates what the lock client needs: the sequence its
// fencing tokens come from and the table each token is committed in.
const PostgresSchema = `CREATE SEQUENCE IF NOT EXISTS lockbench_token;
CREATE TABLE IF NOT EXISTS lockbench_grants (token bigint PRIMARY KEY, client text NOT NULL, granted timestamptz NOT NULL DEFAULT now());`

// grantToken takes the next fencing token in a statement of its own that
// commits: a nextval inside a transaction that never commits is not made
// durable, and a server restarted after a crash can hand it out again.
// The INSERT gives the statement a transaction id, so that its commit
// flushes the sequence's WAL record.
const grantToken = `INSERT INTO lockbench_grants (token, client) VALUES (nextval('lockbench_token'), $1) RETURNING token`

// PostgresConfig configures a PostgreSQL advisory lock client.
type PostgresConfig struct {
	// URL is the server's connection string.
	URL string
	// Key is the advisory lock's key.
	Key int64
	// Owner names the client in the token table.
	Owner string
	// Mode is PgSession or PgXact.
	Mode string
	// TTL paces the client's checks of its session (every TTL/3), each
	// bounded by TTL/3; the server's own detection of a dead client is
	// configured from the same TTL (see backends).
	TTL time.Duration
	// Schema is created, if missing, on the first connection: the
	// lock's own (PostgresSchema) and whatever else the run keeps there.
	Schema string
	// LockTimeout is the server-side bound on one wait for the lock
	// (lock_timeout): past it the statement fails and the session lives on.
	LockTimeout time.Duration
	// Variant is "" or config's correct for a connection of its own,
	// else PgbouncerSession, whose URL is a transaction-pooling
	// pgbouncer's.
	Variant string
	Trace   Trace
}

// Postgres is a PostgreSQL advisory lock as its users write it: a
// dedicated connection whose session holds the lock (pg_advisory_lock), or
// an open transaction on it (pg_advisory_xact_lock). The lock has no TTL:
// it is held as long as the session (or the transaction) lives, and the
// client learns that the server ended its session only when it next uses
// the connection, which it does every TTL/3 while it holds the lock. The
// fencing token comes from a sequence, committed right after the grant.
type Postgres struct {
	cfg PostgresConfig

	// mu serializes the use of the connections: a pgx connection runs
	// one statement at a time, and the session check, the store and
	// the workload share it.
	mu sync.Mutex
	// conn is the session that holds the lock; nil when there is none.
	conn *pgx.Conn
	// aside is a second connection, in autocommit: xact mode takes its
	// tokens there (the lock's transaction commits only at release),
	// and a store records there what the lock's transaction cannot.
	aside *pgx.Conn
	// tx is the transaction holding the lock in xact mode.
	tx pgx.Tx
	// lease is the current holding.
	lease *pgLease
	// schema is set once the schema is known to exist.
	schema bool
}

// schemaKey is the advisory lock that serializes the clients' creation of
// the schema: concurrent CREATE … IF NOT EXISTS statements can collide on
// the catalog's unique indexes.
const schemaKey = 0x6c6f636b62656e63

// ensureSchema creates the schema on c, once per client.
func (p *Postgres) ensureSchema(ctx context.Context, c *pgx.Conn) error {
	if p.schema {
		return nil
	}
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaKey)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, p.cfg.Schema)
		return err
	})
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	p.schema = true
	return nil
}

// NewPostgres makes a client; it connects on its first acquire.
func NewPostgres(cfg PostgresConfig) *Postgres { return &Postgres{cfg: cfg} }

func (p *Postgres) connect(ctx context.Context) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(p.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres config: %w", err)
	}
	cc.ConnectTimeout = p.cfg.TTL
	cc.RuntimeParams["lock_timeout"] = fmt.Sprint(p.cfg.LockTimeout.Milliseconds())
	cc.RuntimeParams["application_name"] = p.cfg.Owner
	if p.cfg.Variant == PgbouncerSession {
		pooled(cc)
	}
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// session returns the connection, opening a new one when the last one is
// gone: a session the server ended never comes back.
func (p *Postgres) session(ctx context.Context) (*pgx.Conn, error) {
	if p.conn != nil && !p.conn.IsClosed() {
		return p.conn, nil
	}
	p.drop()
	// A server that is down (killed, not yet restarted) refuses at
	// once: the client waits for it as it would for the lock, rather
	// than fill the history with refusals.
	for {
		c, err := p.connect(ctx)
		if err == nil {
			if err = p.ensureSchema(ctx, c); err == nil {
				p.conn = c
				return c, nil
			}
			_ = c.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(connectRetry):
		}
	}
}

// connectRetry is how long a client waits between attempts to connect.
const connectRetry = 100 * time.Millisecond

// Aside runs f on the client's second connection, in autocommit.
func (p *Postgres) Aside(ctx context.Context, f func(*pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asideLocked(ctx, f)
}

// asideLocked runs f on the second connection, once more on a new one if
// the server had ended the old one: it sits idle between uses, and an idle
// timeout (--pg-idle-timeout) ends it. Its statements (a token, an audit
// row) may be repeated: a token taken twice is only skipped.
func (p *Postgres) asideLocked(ctx context.Context, f func(*pgx.Conn) error) error {
	var err error
	for range 2 {
		if p.aside == nil || p.aside.IsClosed() {
			c, cerr := p.connect(ctx)
			if cerr != nil {
				return cerr
			}
			p.aside = c
		}
		if err = f(p.aside); err == nil || !p.aside.IsClosed() {
			return err
		}
	}
	return err
}

// drop closes the lock's session: the server then ends it, and every lock
// it held, as soon as it notices.
func (p *Postgres) drop() {
	if p.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.TTL/3)
	defer cancel()
	_ = p.conn.Close(ctx)
	p.conn, p.tx = nil, nil
}

// Close implements Locker.
func (p *Postgres) Close() error {
	p.mu.Lock()
	l := p.lease
	p.mu.Unlock()
	if l != nil {
		l.stopChecks()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop()
	if p.aside != nil {
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.TTL/3)
		defer cancel()
		_ = p.aside.Close(ctx)
	}
	return nil
}

// definite reports whether err is the server's own answer: the statement
// certainly failed, or the server ended the session (a FATAL error sent
// before it closed the connection). Anything else (a timeout, a broken
// connection) leaves the statement's effect unknown.
func definite(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// Acquire implements Locker: it waits, on the server, up to LockTimeout.
func (p *Postgres) Acquire(ctx context.Context) (Lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
	}
	// failed classifies an error of the lock statement or of what
	// follows it while the lock may be held: an answer from the server
	// means the statement failed and, in a transaction, that it rolled
	// back; otherwise the session is given up, which ends any lock it
	// holds once the server notices.
	failed := func(what string, err error, held bool) error {
		if definite(err) && !held {
			if p.tx != nil {
				_ = p.tx.Rollback(ctx)
				p.tx = nil
			}
			return fmt.Errorf("%w: %s: %w", ErrNotAcquired, what, err)
		}
		p.drop()
		return fmt.Errorf("%w: %s: %w", ErrUnknown, what, err)
	}
	var sent int64
	var token int64
	if p.cfg.Mode == PgXact {
		tx, err := c.Begin(ctx)
		if err != nil {
			return nil, failed("begin", err, false)
		}
		p.tx = tx
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", p.cfg.Key); err != nil {
			return nil, failed("pg_advisory_xact_lock", err, false)
		}
		err = p.asideLocked(ctx, func(a *pgx.Conn) error { return a.QueryRow(ctx, grantToken, p.cfg.Owner).Scan(&token) })
		if err != nil {
			return nil, failed("token", err, true)
		}
		// The first statement the holding transaction ran after its
		// grant proves the holding (see Lease.Granted).
		sent = now(p.cfg.Trace)
		if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
			return nil, failed("check", err, true)
		}
	} else {
		if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", p.cfg.Key); err != nil {
			return nil, failed("pg_advisory_lock", err, false)
		}
		sent = now(p.cfg.Trace)
		if err := c.QueryRow(ctx, grantToken, p.cfg.Owner).Scan(&token); err != nil {
			return nil, failed("token", err, true)
		}
	}
	l := &pgLease{p: p, token: token, sent: sent, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	p.lease = l
	go l.check()
	return l, nil
}

// InTx runs f in the transaction that holds the lock, as part of its
// holding; ok is false when the client holds no lock in a transaction.
func (p *Postgres) InTx(ctx context.Context, f func(pgx.Tx) error) (ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tx == nil {
		return false, nil
	}
	return true, f(p.tx)
}

// Commit runs f in the transaction that holds the lock and commits it,
// which also gives the lock up. On an answer from the server the
// transaction certainly rolled back; on anything else the session is given
// up and the commit's outcome is unknown.
func (p *Postgres) Commit(ctx context.Context, f func(pgx.Tx) error) (ok bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tx == nil {
		return false, nil
	}
	tx := p.tx
	p.tx = nil
	if err := f(tx); err != nil {
		if definite(err) {
			_ = tx.Rollback(ctx)
		} else {
			p.drop()
		}
		return true, err
	}
	if err := tx.Commit(ctx); err != nil {
		if !definite(err) && !errors.Is(err, pgx.ErrTxCommitRollback) {
			p.drop()
		}
		return true, err
	}
	return true, nil
}

// pgLease is one holding of a PostgreSQL advisory lock.
type pgLease struct {
	p     *Postgres
	token int64

	lostOnce sync.Once
	lost     chan struct{}
	// stop ends the session checks; done is closed when they have.
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}

	mu   sync.Mutex
	sent int64 // the newest statement that succeeded on the session, when it was sent
	// gone: the server certainly ended the session (or the transaction).
	gone bool
}

func (l *pgLease) Token() (int64, bool)  { return l.token, true }
func (l *pgLease) Lost() <-chan struct{} { return l.lost }

// Granted is the send time of the newest statement that succeeded on the
// holding session after the grant. The lock has no TTL: the session, and
// the lock with it, was certainly alive when the server ran that
// statement, which it did after it was sent; nothing is proven beyond.
func (l *pgLease) Granted() (int64, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent, 0
}

func (l *pgLease) markLost(gone bool) {
	l.mu.Lock()
	l.gone = l.gone || gone
	l.mu.Unlock()
	l.lostOnce.Do(func() { close(l.lost) })
}

func (l *pgLease) stopChecks() {
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
}

// check uses the session every TTL/3 while the lock is held, as a careful
// user's code does between steps: a session the server ended is seen only
// when the connection is next used. Each check is a renewal in the
// history: a statement that succeeded proves the holding up to its send.
func (l *pgLease) check() {
	defer close(l.done)
	p := l.p
	tick := time.NewTicker(p.cfg.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		// Nothing is left to check once the holding is over: released,
		// its session given up, or (xact) its transaction committed by
		// the store, which gave the lock up.
		if p.lease != l || p.conn == nil || (p.cfg.Mode == PgXact && p.tx == nil) {
			p.mu.Unlock()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.TTL/3)
		sent := now(p.cfg.Trace)
		done := renewing(p.cfg.Trace)
		var err error
		if p.tx != nil {
			_, err = p.tx.Exec(ctx, "SELECT 1")
		} else {
			_, err = p.conn.Exec(ctx, "SELECT 1")
		}
		cancel()
		switch {
		case err == nil:
			l.mu.Lock()
			l.sent = sent
			l.mu.Unlock()
			p.mu.Unlock()
			done(0, nil)
			continue
		case definite(err):
			// The server ended the session, or aborted the transaction
			// holding the lock.
			p.drop()
			p.mu.Unlock()
			l.markLost(true)
			done(0, fmt.Errorf("%w: session check: %w", ErrNotHeld, err))
		default:
			p.drop()
			p.mu.Unlock()
			l.markLost(false)
			done(0, fmt.Errorf("%w: session check: %w", ErrUnknown, err))
		}
		return
	}
}

// Release implements Lease: pg_advisory_unlock, or the transaction's
// commit.
func (l *pgLease) Release(ctx context.Context) error {
	l.stopChecks()
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lease == l {
		p.lease = nil
	}
	l.mu.Lock()
	gone := l.gone
	l.mu.Unlock()
	if gone {
		return fmt.Errorf("%w: the server ended the session", ErrNotHeld)
	}
	if p.conn == nil {
		// Given up after an unanswered statement: the server still
		// holds the lock until it notices.
		return fmt.Errorf("%w: the session was given up", ErrUnknown)
	}
	if p.cfg.Mode == PgXact {
		if p.tx == nil {
			// Committed by the store: the commit released the lock.
			return nil
		}
		tx := p.tx
		p.tx = nil
		err := tx.Commit(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, pgx.ErrTxCommitRollback) || definite(err):
			return fmt.Errorf("%w: commit: %w", ErrNotHeld, err)
		}
		p.drop()
		return fmt.Errorf("%w: commit: %w", ErrUnknown, err)
	}
	var ok bool
	err := p.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", p.cfg.Key).Scan(&ok)
	switch {
	case err == nil && ok:
		return nil
	case err == nil:
		return fmt.Errorf("%w: pg_advisory_unlock found no lock of this session", ErrNotHeld)
	case definite(err):
		p.drop()
		return fmt.Errorf("%w: unlock: %w", ErrNotHeld, err)
	}
	p.drop()
	return fmt.Errorf("%w: unlock: %w", ErrUnknown, err)
}
