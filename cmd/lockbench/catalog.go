package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/rundir"
)

// catalogFlag is where a command records or reads runs: --catalog, else
// $LOCKBENCH_CATALOG, else the results root's lockbench.db.
type catalogFlag struct{ path string }

func (c *catalogFlag) add(f *pflag.FlagSet) {
	f.StringVar(&c.path, "catalog", "", "the results catalog: an SQLite file, or a postgres:// URL of a PostgreSQL database a team shares (default $"+catalog.EnvVar+", else "+catalog.File+" in the results root; "+noCatalog+": record nowhere)")
}

// at is the catalog's path for a results root; "" when root is "" and
// nothing else names one.
func (c catalogFlag) at(root string) string {
	switch {
	case c.path != "":
		return c.path
	case os.Getenv(catalog.EnvVar) != "":
		return os.Getenv(catalog.EnvVar)
	case root == "":
		return ""
	}
	return filepath.Join(root, catalog.File)
}

// open opens the catalog at path: a file that is no catalog, a corrupt one
// or one of a newer schema is bad input.
func openCatalog(path string) (*catalog.Catalog, error) {
	c, err := catalog.Open(path)
	switch {
	case errors.Is(err, catalog.ErrBad):
		return nil, fail(exitUsage, err)
	case err != nil:
		return nil, fail(exitHarness, err)
	}
	return c, nil
}

func newImportCmd() *cobra.Command {
	var cat catalogFlag
	cmd := &cobra.Command{
		Use:   "import PATH...",
		Short: "Record judged runs (run directories, results trees, matrix or shard outputs) in the results catalog",
		Example: `  # gather the shards' results into one catalog
  lockbench import --catalog all.db shard-1/results shard-2/results`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := openCatalog(cat.at("results"))
			if err != nil {
				return err
			}
			defer c.Close()
			n, skipped, err := c.Import(args...)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) || errors.Is(err, rundir.ErrNotARun) {
					return fail(exitUsage, err)
				}
				return fail(exitHarness, err)
			}
			fmt.Printf("%d runs recorded in %s", n, c.Name())
			if skipped > 0 {
				fmt.Printf("; %d not yet judged (no %s), left out", skipped, rundir.ResultsFile)
			}
			fmt.Println()
			return nil
		},
	}
	cat.add(cmd.Flags())
	return cmd
}

func newCompareCmd() *cobra.Command {
	var (
		cat    catalogFlag
		where  []string
		since  string
		by     []string
		format string
		asJSON bool
		out    string
		base   baselineFlags
	)
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare runs from the results catalog: detection with its interval, latency, unavailability, cost",
		Long: "Groups the catalog's runs (each by its latest judgment) and prints one row per group.\n\n" +
			"Keys, for --where and --by, are test.json's configuration names: " + strings.Join(catalog.Keys, ", ") +
			". nemesis is the list joined with +, as matrix cells name it; ttl and rtt are durations as Go prints them (2s, 0s).\n\n" +
			"--format html writes a page (" + rundir.CompareFile + " in the results root, the catalog's directory; --out names another file) and prints its path: " +
			"the table, with every figure linking to the group's runs and each run to its report.html; the uncontended acquire's CDF per backend (per group without --by backend); " +
			"the detection rate with its interval per group; unavailability p50/p99 per group, by fault; and, grouped --by ttl, the invalid rate and unavailability against the TTL. " +
			"It is one self-contained file: inline SVG and CSS, nothing fetched.",
		Example: `  # which lock, at what cost, under a pause
  lockbench compare --where nemesis=pause --by backend,fence
  # for scripts
  lockbench compare --json | jq '.groups[] | {key, invalid, runs}'
  # a page with plots, results/compare.html, which lockbench serve links to
  lockbench compare --format html --by backend,nemesis,ttl`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if asJSON {
				format = "json"
			}
			if !slices.Contains(formats, format) {
				return fail(exitUsage, fmt.Errorf("--format %q: one of %s", format, strings.Join(formats, ", ")))
			}
			if err := base.check(); err != nil {
				return err
			}
			q := catalog.Query{Where: map[string]string{}, By: by}
			for _, w := range where {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					return fail(exitUsage, fmt.Errorf("--where %q: want key=value", w))
				}
				q.Where[k] = v
			}
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return fail(exitUsage, fmt.Errorf("--since %q: want an RFC 3339 time (2026-12-01T00:00:00Z)", since))
				}
				q.Since = t
			}
			path := cat.at("results")
			// A database is asked, once open, whether it holds a catalog.
			if _, err := os.Stat(path); err != nil && !catalog.IsURL(path) {
				return fail(exitUsage, fmt.Errorf("no catalog at %s: run, matrix, check or import record one", path))
			}
			c, err := openCatalog(path)
			if err != nil {
				return err
			}
			defer c.Close()
			gs, err := c.Compare(q)
			if err != nil {
				return fail(exitUsage, err)
			}
			if len(gs) == 0 {
				return fail(exitUsage, fmt.Errorf("no runs match %s in %s", describe(q), c.Name()))
			}
			diff, err := base.diff(c, path, q)
			if err != nil {
				return err
			}
			if format == "html" {
				return writeCompareHTML(out, path, q, gs)
			}
			w := io.Writer(os.Stdout)
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return fail(exitHarness, err)
				}
				defer f.Close()
				w = f
			}
			if err := printGroups(w, format, q, gs, diff); err != nil {
				return err
			}
			if err := printChanges(w, format, base.name(), q.By, diff); err != nil {
				return err
			}
			return base.exit(diff)
		},
	}
	f := cmd.Flags()
	cat.add(f)
	f.StringArrayVar(&where, "where", nil, "keep runs whose key has this value, key=value (repeat it; values may hold commas)")
	f.StringVar(&since, "since", "", "keep runs judged at or after this RFC 3339 time")
	f.StringSliceVar(&by, "by", catalog.DefaultBy, "keys to group by, comma separated")
	f.StringVar(&format, "format", "table", "one of "+strings.Join(formats, ", "))
	f.BoolVar(&asJSON, "json", false, "the same as --format json")
	f.StringVarP(&out, "out", "o", "", "write to this file instead of stdout (html: instead of "+rundir.CompareFile+" in the results root)")
	base.add(f)
	return cmd
}

func describe(q catalog.Query) string {
	var parts []string
	for k, v := range q.Where {
		parts = append(parts, k+"="+v)
	}
	if !q.Since.IsZero() {
		parts = append(parts, "since "+q.Since.Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "any selection"
	}
	return strings.Join(parts, ", ")
}

// columns are the figures a table shows of each group, after its key,
// short enough that the terminal's table of the default keys fits 100
// columns; legend says what they are.
var columns = []struct {
	head string
	of   func(g catalog.Group) string
}{
	{"runs", func(g catalog.Group) string { return strconv.Itoa(g.Runs) }},
	{"invalid (95 %)", func(g catalog.Group) string {
		return fmt.Sprintf("%d [%.2f, %.2f]", g.Invalid, g.InvalidInterval[0], g.InvalidInterval[1])
	}},
	{"unk", func(g catalog.Group) string { return strconv.Itoa(g.Unknown) }},
	{"acquire", func(g catalog.Group) string { return pair(g.AcquireUncontended.P50, g.AcquireUncontended.P99) }},
	{"unavail", func(g catalog.Group) string { return pair(g.Unavailable.P50, g.Unavailable.P99) }},
	{"cycles/s", func(g catalog.Group) string { return fmt.Sprintf("%.0f", g.CyclesPerSec) }},
}

// legend says what the columns are, under the table.
const legend = "invalid: runs judged invalid [Wilson 95 % interval over the judged runs]; unk: unknown\n" +
	"acquire: the uncontended acquire, p50/p99 ms\n" +
	"unavail: the lock's unavailability after each fault, p50/p99 ms"

func pair(a, b *float64) string {
	f := func(p *float64) string {
		if p == nil {
			return "–"
		}
		// Three significant digits, and whole ms past 100: 3850, not
		// 3.85e+03.
		if *p >= 100 {
			return strconv.FormatFloat(*p, 'f', 0, 64)
		}
		return strconv.FormatFloat(*p, 'g', 3, 64)
	}
	return f(a) + "/" + f(b)
}

// printGroups writes the groups; with a baseline, json has its changes
// beside them.
func printGroups(w io.Writer, format string, q catalog.Query, gs []catalog.Group, d *catalog.Diff) error {
	by := groupBy(q)
	row := func(g catalog.Group) []string { return tableRow(by, g) }
	head := tableHead(by)
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		doc := struct {
			Groups  []catalog.Group   `json:"groups"`
			Changes *[]catalog.Change `json:"changes,omitempty"`
		}{Groups: gs}
		if d != nil {
			changes := append([]catalog.Change{}, d.Changes...)
			doc.Changes = &changes
		}
		return enc.Encode(doc)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(head)
		for _, g := range gs {
			cw.Write(row(g))
		}
		cw.Flush()
		return cw.Error()
	case "md":
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, g := range gs {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row(g), " | "))
		}
		fmt.Fprintf(w, "\n- %s\n", strings.ReplaceAll(legend, "\n", "\n- "))
		return nil
	case "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, g := range gs {
			fmt.Fprintln(tw, strings.Join(row(g), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w, legend)
		return err
	}
	return fail(exitUsage, fmt.Errorf("--format %q: one of %s", format, strings.Join(formats, ", ")))
}

// tableHead is the head of every format's table: the --by keys, then the
// columns.
func tableHead(by []string) []string {
	head := slices.Clone(by)
	for _, c := range columns {
		head = append(head, c.head)
	}
	return head
}

// tableRow is a group's row under tableHead.
func tableRow(by []string, g catalog.Group) []string {
	var r []string
	for _, k := range by {
		r = append(r, g.Key[k])
	}
	for _, c := range columns {
		r = append(r, c.of(g))
	}
	return r
}

// formats are what compare prints.
var formats = []string{"table", "md", "json", "csv", "html"}
