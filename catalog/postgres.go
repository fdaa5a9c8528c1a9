package catalog

import (
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
)

// migrationLock is the pg_advisory_xact_lock key the migration
// transaction holds, so that writers opening a new catalog at once do not
// both create its tables: the second waits, then reads the schema the
// first committed. ("lockbench" in ASCII.)
const migrationLock int64 = 0x6c6f636b62656e63

// openPostgres opens the catalog in the PostgreSQL database at rawURL.
// Nothing there is written before the schema is known to be one this
// lockbench can bring up to date.
func openPostgres(rawURL string, migrations []string) (*Catalog, error) {
	name := redact(rawURL)
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	c := &Catalog{db: db, path: name}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	if err := c.migratePostgres(migrations); err != nil {
		db.Close()
		return nil, err
	}
	return c, nil
}

// redact is rawURL as messages may show it: without its password.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Not shown: a URL that does not parse may hold a password anywhere.
		return "the postgres catalog"
	}
	return u.Redacted()
}

// migratePostgres brings the catalog up to date one migration at a time,
// each in a transaction that holds the migration lock and reads the
// schema again under it: another lockbench may have migrated while this
// one waited. A refusal rolls back a transaction that wrote nothing.
func (c *Catalog) migratePostgres(migrations []string) error {
	for {
		done, err := c.migrateStep(migrations)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration the catalog lacks, and says
// whether there was none.
func (c *Catalog) migrateStep(migrations []string) (bool, error) {
	tx, err := c.db.Begin()
	if err != nil {
		return false, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return false, fmt.Errorf("catalog %s: lock for migration: %w", c.path, err)
	}
	schema, err := c.postgresSchema(tx, len(migrations))
	if err != nil {
		return false, err
	}
	if schema == len(migrations) {
		return true, nil
	}
	if _, err := tx.Exec(migrations[schema]); err != nil {
		return false, fmt.Errorf("catalog %s: migrate to schema %d: %w", c.path, schema+1, err)
	}
	if _, err := tx.Exec(`UPDATE catalog SET value = $1 WHERE key = 'schema'`, strconv.Itoa(schema+1)); err != nil {
		return false, fmt.Errorf("catalog %s: migrate to schema %d: %w", c.path, schema+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("catalog %s: migrate to schema %d: %w", c.path, schema+1, err)
	}
	return false, nil
}

// postgresSchema is the schema of the catalog in the database's current
// schema (search_path): 0 when it has no tables, and a refusal when it
// has tables but no catalog, or a catalog newer than known. The catalog
// table's existence is asked first, as a query of a missing table would
// abort the transaction.
func (c *Catalog) postgresSchema(tx *sql.Tx, known int) (int, error) {
	var tables int
	var hasCatalog bool
	err := tx.QueryRow(`SELECT (SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()),
		to_regclass('catalog') IS NOT NULL`).Scan(&tables, &hasCatalog)
	if err != nil {
		return 0, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	switch {
	case tables == 0:
		return 0, nil
	case !hasCatalog:
		return 0, fmt.Errorf("%w: %s has tables but no lockbench catalog", ErrBad, c.path)
	}
	schema, err := schemaOf(tx, c.path)
	if err != nil {
		return 0, err
	}
	if schema > known {
		return 0, fmt.Errorf("%w: %s has schema %d, newer than this lockbench's %d: use a newer lockbench", ErrBad, c.path, schema, known)
	}
	return schema, nil
}
