package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lockbench/lockbench/history"
)

// PostgresSchema creates the table the protected value lives in and the
// audit table every write is recorded in, accepted or rejected.
const PostgresSchema = `CREATE TABLE IF NOT EXISTS lockbench_data (key text PRIMARY KEY, value bigint NOT NULL, elements bigint[]);
CREATE SEQUENCE IF NOT EXISTS lockbench_audit_seq;
CREATE TABLE IF NOT EXISTS lockbench_audit (seq bigint PRIMARY KEY DEFAULT nextval('lockbench_audit_seq'),
  time bigint NOT NULL, req text NOT NULL, client text NOT NULL, op text NOT NULL, key text NOT NULL,
  token bigint NOT NULL, value bigint NOT NULL, elements bigint[], prev bigint NOT NULL, outcome text NOT NULL, reason text);`

// PostgresLog is the query that prints the audit table as store.log, one
// JSON line per request in the order of the audit sequence: the accepted
// writes committed in the order of their transactions, each of which held
// the lock, so the sequence's order among them is the order they applied.
// Seqs are renumbered from 0 (a rolled-back transaction leaves gaps).
const PostgresLog = `SELECT json_strip_nulls(json_build_object('seq', row_number() OVER (ORDER BY seq) - 1, 'time', time,
  'req', req, 'client', client, 'op', op, 'key', key, 'token', NULLIF(token, 0), 'value', value, 'set', elements,
  'prev', prev, 'outcome', outcome, 'reason', reason)) FROM lockbench_audit ORDER BY seq`

// PgHolder is the lock client whose transaction holds the lock
// (pg_advisory_xact_lock): the store runs its statements in it.
type PgHolder interface {
	// InTx runs f in the transaction that holds the lock; ok is false
	// when there is none.
	InTx(ctx context.Context, f func(pgx.Tx) error) (ok bool, err error)
	// Commit runs f in that transaction and commits it, which gives the
	// lock up.
	Commit(ctx context.Context, f func(pgx.Tx) error) (ok bool, err error)
	// Aside runs f on a connection of its own, in autocommit; it may run
	// f twice.
	Aside(ctx context.Context, f func(*pgx.Conn) error) error
}

// Postgres keeps the protected value in PostgreSQL, in the pattern that is
// safe without a fence: the read and the write run in the transaction that
// holds pg_advisory_xact_lock, and the write commits it. A holder whose
// session the server ended cannot commit anything: its transaction died
// with the session, and the lock with it.
//
// Reads are not in the audit table: a read's row written in the holding
// transaction would vanish when that transaction rolls back, and one
// written beside it could be ordered after a later holder's write. As with
// etcd, a write stores its writer's read plus one, which is what the
// checkers use.
type Postgres struct {
	h     PgHolder
	epoch int64
}

// NewPostgres keeps the value through the lock client h.
func NewPostgres(h PgHolder, epoch int64) *Postgres { return &Postgres{h: h, epoch: epoch} }

// Read returns the value in the holding transaction.
func (s *Postgres) Read(ctx context.Context, r Request) (Response, error) {
	var resp Response
	ok, err := s.h.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT value, elements FROM lockbench_data WHERE key = $1`, r.Key).Scan(&resp.Value, &resp.Set)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	switch {
	case !ok:
		return Response{}, fmt.Errorf("%w: the client holds no lock", ErrRejected)
	case err != nil:
		return Response{}, pgFailure("postgres read", err)
	}
	resp.Outcome = Accepted
	return resp, nil
}

// Write stores r and records it in the audit table, in the holding
// transaction, and commits. A write the server refused is recorded as
// rejected beside it.
func (s *Postgres) Write(ctx context.Context, r Request) error {
	t := history.Mono() - s.epoch
	ok, err := s.h.Commit(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `WITH old AS (SELECT value FROM lockbench_data WHERE key = $1),
  up AS (INSERT INTO lockbench_data (key, value, elements) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, elements = excluded.elements)
INSERT INTO lockbench_audit (time, req, client, op, key, token, value, elements, prev, outcome)
  VALUES ($4, $5, $6, 'write', $1, $7, $2, $3, coalesce((SELECT value FROM old), 0), 'accepted')`,
			r.Key, r.Value, r.Set, t, r.Req, r.Client, r.Token)
		return err
	})
	if !ok {
		s.reject(ctx, r, t, "the client holds no lock")
		return fmt.Errorf("%w: the client holds no lock", ErrRejected)
	}
	if err == nil {
		return nil
	}
	if definite(err) {
		s.reject(ctx, r, t, err.Error())
	}
	return pgFailure("postgres write", err)
}

// reject records a write that certainly did not apply. The record is
// evidence only: if it cannot be written, the history still has the
// failure.
func (s *Postgres) reject(ctx context.Context, r Request, t int64, reason string) {
	_ = s.h.Aside(ctx, func(c *pgx.Conn) error {
		// Idempotent: the lock client may run it twice (Aside).
		_, err := c.Exec(ctx, `INSERT INTO lockbench_audit (time, req, client, op, key, token, value, elements, prev, outcome, reason)
  SELECT $1, $2, $3, 'write', $4, $5, $6, $7, coalesce((SELECT value FROM lockbench_data WHERE key = $4), 0), 'rejected', $8
  WHERE NOT EXISTS (SELECT 1 FROM lockbench_audit WHERE req = $2)`,
			t, r.Req, r.Client, r.Key, r.Token, r.Value, r.Set, reason)
		return err
	})
}

// definite reports whether err is the server's answer, or a commit that
// rolled back: the request certainly had no effect.
func definite(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || errors.Is(err, pgx.ErrTxCommitRollback)
}

// pgFailure wraps a definite failure in ErrRejected; any other error (a
// timeout, a broken connection) leaves the outcome unknown.
func pgFailure(what string, err error) error {
	if definite(err) {
		return fmt.Errorf("%w: %s: %w", ErrRejected, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
