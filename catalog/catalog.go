// Package catalog records every judged run in one database, so that runs
// can be compared across invocations, shards, days and revisions: which
// lock, at what cost. It is SQLite through modernc.org/sqlite, which is
// pure Go, so the binary stays static, or, for a catalog a team shares,
// PostgreSQL through pgx: the same schema and the same statements on both
// (numbered $N placeholders, which SQLite takes too).
//
// A run is keyed by (run_id, start, seed) from its test.json, which a
// re-check never rewrites: importing a run again, before or after a check,
// keeps one row of it, and each judgment of it is kept beside the others,
// keyed by the revision of lockbench that judged it.
package catalog

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
)

// ErrBad marks a file that is not a catalog this lockbench can use: not a
// catalog at all, a corrupt one, or one of a newer schema. It is refused,
// never overwritten.
var ErrBad = errors.New("not a usable catalog")

// File is the catalog's name under a results root.
const File = "lockbench.db"

// EnvVar overrides where the catalog lives: a file, or a postgres:// URL.
const EnvVar = "LOCKBENCH_CATALOG"

// Catalog is an open catalog.
type Catalog struct {
	db *sql.DB
	// path names the catalog in messages: its file, or its URL without
	// the password.
	path string
}

// migrations build the schema: migrations[i] takes a catalog from schema i
// to schema i+1. A catalog's schema is the number of them it has had.
var migrations = []string{
	`CREATE TABLE catalog (key TEXT PRIMARY KEY, value TEXT NOT NULL);
	CREATE TABLE runs (
		run_id TEXT NOT NULL, start TEXT NOT NULL, seed BIGINT NOT NULL,
		name TEXT NOT NULL, dir TEXT NOT NULL,
		backend TEXT NOT NULL, workload TEXT NOT NULL, nemesis TEXT NOT NULL, fence TEXT NOT NULL,
		store TEXT NOT NULL, variant TEXT NOT NULL, ttl TEXT NOT NULL, concurrency BIGINT NOT NULL,
		rtt TEXT NOT NULL, work TEXT NOT NULL, pause_target TEXT NOT NULL,
		config TEXT NOT NULL, versions TEXT NOT NULL, host TEXT NOT NULL,
		PRIMARY KEY (run_id, start, seed));
	CREATE TABLE judgments (
		run_id TEXT NOT NULL, start TEXT NOT NULL, seed BIGINT NOT NULL, revision TEXT NOT NULL,
		checked TEXT NOT NULL, verdict TEXT NOT NULL, evidence TEXT NOT NULL,
		checkers TEXT NOT NULL, metrics TEXT NOT NULL,
		PRIMARY KEY (run_id, start, seed, revision),
		FOREIGN KEY (run_id, start, seed) REFERENCES runs (run_id, start, seed));
	CREATE TABLE faults (
		run_id TEXT NOT NULL, start TEXT NOT NULL, seed BIGINT NOT NULL, n BIGINT NOT NULL,
		fault TEXT NOT NULL, start_ns BIGINT NOT NULL, end_ns BIGINT NOT NULL, healthy_ns BIGINT NOT NULL,
		targets TEXT NOT NULL,
		PRIMARY KEY (run_id, start, seed, n),
		FOREIGN KEY (run_id, start, seed) REFERENCES runs (run_id, start, seed));
	INSERT INTO catalog (key, value) VALUES ('lockbench', 'catalog'), ('schema', '1');`,
	// 2: the matrix cell a run was one of and its grid's flags, by which
	// matrix --until-decided pools runs; and whether it was interrupted,
	// which makes it no verdict.
	`ALTER TABLE runs ADD COLUMN cell TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN flags TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN cell_spec TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN interrupted BIGINT NOT NULL DEFAULT 0;`,
}

// Schema is the schema this lockbench writes.
func Schema() int { return len(migrations) }

// Open opens the catalog at path, creating it if it does not exist and
// bringing an older schema up to date. path is an SQLite file, or a
// postgres:// (postgresql://) URL of a PostgreSQL database. A file that is
// not a catalog, a corrupt one, or one of a newer schema, or a database
// with tables but no catalog or with a catalog of a newer schema, wraps
// ErrBad and is left as it was.
func Open(path string) (*Catalog, error) {
	if IsURL(path) {
		return openPostgres(path, migrations)
	}
	return open(path, migrations)
}

// IsURL says whether path names a PostgreSQL database rather than a file.
func IsURL(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}

// Name is how messages name the catalog: its file, or its URL without the
// password.
func (c *Catalog) Name() string { return c.path }

func open(path string, migrations []string) (*Catalog, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", ErrBad, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	// An existing file is first looked at read-only: setting the journal
	// mode of a file that is no catalog would already change it.
	if _, err := os.Stat(path); err == nil {
		if err := inspect(path, len(migrations)); err != nil {
			return nil, err
		}
	}
	// WAL lets parallel cells write while others read, and the busy
	// timeout has each writer wait its turn rather than fail; a writer
	// takes its lock when its transaction begins, so two never deadlock
	// upgrading theirs.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	c := &Catalog{db: db, path: path}
	if err := c.migrate(migrations); err != nil {
		db.Close()
		return nil, err
	}
	return c, nil
}

// inspect refuses, without writing to it, a file that is not a catalog of
// a schema up to known: not SQLite, corrupt, another database, newer.
func inspect(path string, known int) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(30000)")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBad, path, err)
	}
	defer db.Close()
	var tables int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&tables); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBad, path, err)
	}
	if tables == 0 {
		return nil
	}
	schema, err := schemaOf(db, path)
	if err != nil {
		return err
	}
	if schema > known {
		return fmt.Errorf("%w: %s has schema %d, newer than this lockbench's %d: use a newer lockbench", ErrBad, path, schema, known)
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		return fmt.Errorf("%w: %s fails its integrity check (%s%v)", ErrBad, path, ok, err)
	}
	return nil
}

// querier is a database or a transaction in one.
type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// schemaOf is the schema of the catalog db, which has tables.
func schemaOf(db querier, path string) (int, error) {
	var kind, version string
	err := db.QueryRow(`SELECT (SELECT value FROM catalog WHERE key = 'lockbench'), (SELECT value FROM catalog WHERE key = 'schema')`).Scan(&kind, &version)
	if err != nil || kind != "catalog" {
		return 0, fmt.Errorf("%w: %s is a database but no lockbench catalog", ErrBad, path)
	}
	schema, err := strconv.Atoi(version)
	if err != nil {
		return 0, fmt.Errorf("%w: %s has schema %q", ErrBad, path, version)
	}
	return schema, nil
}

// Close closes the catalog.
func (c *Catalog) Close() error { return c.db.Close() }

// migrate refuses what is not a catalog of a schema it knows, and brings
// an older one up to date, each step in a transaction of its own.
func (c *Catalog) migrate(migrations []string) error {
	schema, err := c.sqliteSchema(c.db)
	if err != nil {
		return err
	}
	if schema > len(migrations) {
		return fmt.Errorf("%w: %s has schema %d, newer than this lockbench's %d: use a newer lockbench", ErrBad, c.path, schema, len(migrations))
	}
	for s := schema; s < len(migrations); s++ {
		tx, err := c.db.Begin()
		if err != nil {
			return fmt.Errorf("catalog %s: %w", c.path, err)
		}
		// The transaction holds the write lock from its start: read the
		// schema again under it, as another writer opening the catalog at
		// the same time may have migrated it meanwhile.
		if now, err := c.sqliteSchema(tx); err != nil || now > s {
			tx.Rollback()
			if err != nil {
				return err
			}
			if now > len(migrations) {
				return fmt.Errorf("%w: %s has schema %d, newer than this lockbench's %d: use a newer lockbench", ErrBad, c.path, now, len(migrations))
			}
			s = now - 1
			continue
		}
		_, err = tx.Exec(migrations[s])
		if err == nil {
			_, err = tx.Exec(`UPDATE catalog SET value = $1 WHERE key = 'schema'`, strconv.Itoa(s+1))
		}
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("catalog %s: migrate to schema %d: %w", c.path, s+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("catalog %s: migrate to schema %d: %w", c.path, s+1, err)
		}
	}
	return nil
}

// sqliteSchema is the schema of the SQLite catalog: 0 when it has no
// tables.
func (c *Catalog) sqliteSchema(q querier) (int, error) {
	var tables int
	if err := q.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&tables); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrBad, c.path, err)
	}
	if tables == 0 {
		return 0, nil
	}
	return schemaOf(q, c.path)
}

// Entry is what the catalog keeps of one judgment of one run.
type Entry struct {
	Test    rundir.Test
	Dir     string
	Results rundir.Results
	Metrics metrics.Run
}

// Record records a judged run in one transaction: its configuration
// once, and its judgment by this revision beside any others.
func (c *Catalog) Record(e Entry) error { return c.RecordMeasured(e.Measured()) }

// RecordMeasured records a run as a measured line keeps it, as Record
// would have the run's directory.
func (c *Catalog) RecordMeasured(m Measured) error {
	cfg := m.Config
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("catalog: encode %T: %v", v, err)) // every value here encodes
		}
		return string(b)
	}
	start := m.Start.UTC().Format(time.RFC3339Nano)
	interrupted := 0
	if m.Interrupted {
		interrupted = 1
	}
	tx, err := c.db.Begin()
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.path, err)
	}
	defer tx.Rollback()
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO runs (run_id, start, seed, name, dir, backend, workload, nemesis, fence, store, variant, ttl, concurrency, rtt, work, pause_target, config, versions, host, cell, flags, cell_spec, interrupted)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
		ON CONFLICT (run_id, start, seed) DO UPDATE SET dir = excluded.dir`,
			[]any{m.RunID, start, cfg.Seed, m.Name, m.Dir, cfg.Backend, cfg.Workload, strings.Join(cfg.Nemesis, "+"), string(cfg.Fence),
				cfg.Store, cfg.Variant, cfg.TTL.D().String(), cfg.Concurrency, cfg.RTT.D().String(), cfg.Work, cfg.PauseTarget,
				js(cfg), js(m.Versions), m.Host, m.Cell, m.Flags, string(m.CellSpec), interrupted}},
		{`INSERT INTO judgments (run_id, start, seed, revision, checked, verdict, evidence, checkers, metrics)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (run_id, start, seed, revision) DO UPDATE SET checked = excluded.checked, verdict = excluded.verdict,
			evidence = excluded.evidence, checkers = excluded.checkers, metrics = excluded.metrics`,
			[]any{m.RunID, start, cfg.Seed, m.Revision, m.Checked.UTC().Format(time.RFC3339Nano), string(m.Verdict),
				m.Evidence, js(m.Checkers), js(m.Metrics)}},
		{`DELETE FROM faults WHERE run_id = $1 AND start = $2 AND seed = $3`, []any{m.RunID, start, cfg.Seed}},
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s.q, s.args...); err != nil {
			return fmt.Errorf("catalog %s: record %s: %w", c.path, m.Dir, err)
		}
	}
	for n, f := range m.Faults {
		if _, err := tx.Exec(`INSERT INTO faults (run_id, start, seed, n, fault, start_ns, end_ns, healthy_ns, targets) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			m.RunID, start, cfg.Seed, n, f.Fault, f.Start, f.End, f.Healthy, strings.Join(f.Targets, ",")); err != nil {
			return fmt.Errorf("catalog %s: record %s: %w", c.path, m.Dir, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("catalog %s: record %s: %w", c.path, m.Dir, err)
	}
	return nil
}

// hostClass is the run's host class as the catalog keys it: "" for a run
// recorded without one, whose latencies compare with no other's.
func hostClass(t rundir.Test) string {
	if t.HostClass == nil {
		return ""
	}
	return t.HostClass.String()
}

// summary is what the catalog keeps of one checker's result: its verdict,
// its counts (the damage) and how many anomalies of each kind it found.
type summary struct {
	Checker   string           `json:"checker"`
	Valid     checkers.Verdict `json:"valid"`
	Counts    map[string]int64 `json:"counts"`
	Anomalies map[string]int64 `json:"anomalies,omitempty"`
	First     *int64           `json:"first_anomaly_ns,omitempty"`
}

func summaries(rs []checkers.Result) []summary {
	out := make([]summary, len(rs))
	for i, r := range rs {
		s := summary{Checker: r.Checker, Valid: r.Valid, Counts: r.Counts}
		for _, a := range r.Anomalies {
			if s.Anomalies == nil {
				s.Anomalies = map[string]int64{}
			}
			s.Anomalies[a.Kind]++
		}
		out[i] = s
	}
	return out
}

// faultsOf are the faults the run injected, as its checkers saw them.
func faultsOf(rs []checkers.Result) []checkers.FaultEffect {
	for _, r := range rs {
		if len(r.Faults) > 0 {
			return r.Faults
		}
	}
	return nil
}
