package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/store"
)

// baselineFlags are compare's comparison against a baseline: another
// catalog, or another revision's judgments in the same one.
type baselineFlags struct {
	catalog, revision string
	failOn            []string
	factor            float64
	expectations      string
}

func (b *baselineFlags) add(f *pflag.FlagSet) {
	f.StringVar(&b.catalog, "baseline-catalog", "", "compare with the runs of this catalog, selected and grouped alike, and list the groups that changed")
	f.StringVar(&b.revision, "baseline-revision", "", "compare with the judgments of this lockbench revision in the same catalog (the version string results.json records, its VCS revision, or a prefix of that)")
	f.StringSliceVar(&b.failOn, "fail-on", []string{catalog.KindDetection, catalog.KindNewInvalid},
		"kinds of change that make the exit code 1, comma separated: "+strings.Join(catalog.Kinds, ", "))
	f.Float64Var(&b.factor, "latency-factor", catalog.DefaultLatencyFactor, "a p99 uncontended acquire more than this many times the baseline's is a latency change")
	f.StringVar(&b.expectations, "expectations", "", "expectations file that says which groups can lose detection (default: the built-in one)")
}

// check refuses what cannot be compared before anything is read.
func (b *baselineFlags) check() error {
	if b.catalog != "" && b.revision != "" {
		return fail(exitUsage, errors.New("--baseline-catalog and --baseline-revision: give one baseline, not both"))
	}
	for _, k := range b.failOn {
		if !slices.Contains(catalog.Kinds, k) {
			return fail(exitUsage, fmt.Errorf("--fail-on %q: the kinds are %s", k, strings.Join(catalog.Kinds, ", ")))
		}
	}
	if b.factor <= 0 {
		return fail(exitUsage, fmt.Errorf("--latency-factor %g: want a positive number", b.factor))
	}
	return nil
}

func (b *baselineFlags) given() bool { return b.catalog != "" || b.revision != "" }

// diff compares c's groups with the baseline's; nil without a baseline.
func (b *baselineFlags) diff(c *catalog.Catalog, path string, q catalog.Query) (*catalog.Diff, error) {
	if !b.given() {
		return nil, nil
	}
	exp, err := matrix.LoadExpectations(b.expectations)
	if err != nil {
		return nil, fail(exitUsage, err)
	}
	base, baseQ := c, q
	if b.revision != "" {
		baseQ.Revision = b.revision
		gs, err := c.Compare(baseQ)
		if err != nil {
			return nil, fail(exitUsage, err)
		}
		if len(gs) == 0 {
			return nil, fail(exitUsage, fmt.Errorf("--baseline-revision %s: no run judged by it matches %s in %s", b.revision, describe(q), path))
		}
	} else {
		if _, err := os.Stat(b.catalog); err != nil {
			return nil, fail(exitUsage, fmt.Errorf("--baseline-catalog: %w", err))
		}
		if base, err = openCatalog(b.catalog); err != nil {
			return nil, err
		}
		defer base.Close()
	}
	d, err := catalog.AgainstBaseline(c, q, base, baseQ, catalog.BaselineOptions{
		LatencyFactor: b.factor,
		Expect:        func(k map[string]string) string { return exp.ForRun(runConfig(k)) },
	})
	if err != nil {
		return nil, fail(exitHarness, err)
	}
	return &d, nil
}

// runConfig is the configuration of the runs whose catalog.ExpectKeys have
// the values k, as far as the matrix's rules read it. The catalog keeps no
// column for --check-lease or --on-lock-error, so a rule on those judges
// the runs as if they had the flags' defaults.
func runConfig(k map[string]string) config.Config {
	cfg := config.Config{Backend: k["backend"], Workload: k["workload"], Nemesis: strings.Split(k["nemesis"], config.Combine),
		Fence: store.Fence(k["fence"]), Store: k["store"], Variant: k["variant"], Work: k["work"]}
	// A value the catalog wrote that does not parse is left at zero,
	// which the rules read as the flag's default.
	if d, err := time.ParseDuration(k["ttl"]); err == nil {
		cfg.TTL = config.Duration(d)
	}
	if d, err := time.ParseDuration(k["rtt"]); err == nil {
		cfg.RTT = config.Duration(d)
	}
	cfg.Concurrency, _ = strconv.Atoi(k["concurrency"])
	return cfg
}

// exit is the exit code the changes call for: 1 when one is of a kind
// --fail-on names.
func (b *baselineFlags) exit(d *catalog.Diff) error {
	if d == nil {
		return nil
	}
	for _, c := range d.Changes {
		if slices.Contains(b.failOn, c.Kind) {
			return exitCode(exitInvalid)
		}
	}
	return nil
}

// name is how the changes section names the baseline.
func (b *baselineFlags) name() string {
	if b.revision != "" {
		return "revision " + b.revision
	}
	return b.catalog
}

// printChanges writes the changes section that follows the groups in a
// table or in markdown.
func printChanges(w io.Writer, format, baseline string, by []string, d *catalog.Diff) error {
	if d == nil || (format != "table" && format != "md") {
		return nil
	}
	if len(by) == 0 {
		by = catalog.DefaultBy
	}
	key := func(k map[string]string) string {
		var parts []string
		for _, b := range by {
			parts = append(parts, b+"="+k[b])
		}
		return strings.Join(parts, " ")
	}
	side := func(c catalog.Change, s catalog.Side) string {
		if c.Kind == catalog.KindLatency && s.AcquireUncontended != nil {
			p99 := "–"
			if p := s.AcquireUncontended.P99; p != nil {
				p99 = strconv.FormatFloat(*p, 'g', 3, 64)
			}
			return fmt.Sprintf("p99 %s ms (n=%d)", p99, s.AcquireUncontended.N)
		}
		return fmt.Sprintf("%d/%d invalid [%.2f, %.2f]", s.Invalid, s.Runs-s.Unknown, s.InvalidInterval[0], s.InvalidInterval[1])
	}
	head := []string{"group", "kind", "baseline", "now", "why"}
	rows := [][]string{}
	for _, c := range d.Changes {
		rows = append(rows, []string{key(c.Key), c.Kind, side(c, c.Baseline), side(c, c.Now), c.Message})
	}
	if format == "md" {
		fmt.Fprintf(w, "\n### Changes against %s\n\n", baseline)
		if len(rows) == 0 {
			fmt.Fprintln(w, "No group changed.")
		} else {
			fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
			for _, r := range rows {
				fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
			}
		}
		for _, i := range d.Incomparable {
			fmt.Fprintf(w, "\n- %s: %s", key(i.Key), i.Reason)
		}
		if len(d.Incomparable) > 0 {
			fmt.Fprintln(w)
		}
		return nil
	}
	fmt.Fprintf(w, "\nchanges against %s:", baseline)
	if len(rows) == 0 {
		fmt.Fprint(w, " none")
	}
	fmt.Fprintln(w)
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, i := range d.Incomparable {
		fmt.Fprintf(w, "%s: %s\n", key(i.Key), i.Reason)
	}
	return nil
}
