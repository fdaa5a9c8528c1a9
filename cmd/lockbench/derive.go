package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/verdict"
)

// newDeriveCmd is `matrix derive`: expectations.yaml's measured section
// from the cells' measured runs.
func newDeriveCmd(t *testFlags, out *output) *cobra.Command {
	var (
		from, file, flags string
		check             bool
		rule              = matrix.DefaultStopRule
	)
	cmd := &cobra.Command{
		Use:   "derive",
		Short: "Write the classes the cells' measured runs decide into the measured section of an expectations file",
		Long: `Derive decides the class of every matrix cell that --from holds runs of,
by the runs judged by this lockbench or a revision listed as
verdict-compatible, one per seed, with the rule of matrix --until-decided:

  invalid  the Wilson 95 % lower bound p_lo of the detection rate makes
           (1 − p_lo)^R ≤ --flake for some R ≤ --max-ci-runs: CI runs the
           cell R times and passes when one of them is invalid;
  valid    no invalid run in at least --min-runs: no counterexample in n;
  finding  an invalid run where the cell's rule expects valid;
  either   anything else, once --max-runs runs are in.

It rewrites the file's measured section (the rules and mutants above it
stay byte for byte), lists every cell whose class contradicts its rule's
expect with the rule's reason, and the cells not decided yet.`,
		Example: `  # the measured section of the built-in expectations, from the committed runs
  lockbench matrix derive --from matrix/measured --expectations matrix/expectations.yaml
  # fail (exit 1) when the file is not what the runs decide
  lockbench matrix derive --from matrix/measured --expectations matrix/expectations.yaml --check`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			w := out.human()
			if err := rule.Check(); err != nil {
				return fail(exitUsage, err)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				return fail(exitUsage, fmt.Errorf("--expectations: %w", err))
			}
			exp, err := matrix.LoadExpectations(file)
			if err != nil {
				return fail(exitUsage, err)
			}
			cat, done, err := deriveSource(from, t.cat.at(t.results))
			if err != nil {
				return err
			}
			defer done()
			d, err := matrix.Derive(cat, exp, rule, verdict.Compatible, flags)
			if err != nil {
				return fail(exitUsage, err)
			}
			next, err := matrix.WithMeasured(src, d.Measured)
			if err != nil {
				return fail(exitHarness, err)
			}
			for _, c := range d.Contradictions {
				fmt.Fprintf(w, "%s: %s; its rule expects %s: %s\n", c.Cell, c.Decision, c.Expect, c.Reason)
			}
			for _, c := range d.Open {
				fmt.Fprintf(w, "%s: not decided yet, %s\n", c.Cell, c.Decision)
			}
			fmt.Fprintf(w, "%d cells decided, %d contradicting their rule, %d not decided\n", len(d.Measured), len(d.Contradictions), len(d.Open))
			if check {
				if !bytes.Equal(src, next) {
					return fail(1, fmt.Errorf("%s is not what the measured runs decide: run lockbench matrix derive without --check", file))
				}
				return nil
			}
			if err := os.WriteFile(file, next, 0o644); err != nil {
				return fail(exitHarness, fmt.Errorf("write %s: %w", file, err))
			}
			fmt.Fprintf(w, "wrote %s\n", file)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "a catalog (file or postgres:// URL), or a measured directory or file (default: the catalog under --results)")
	f.StringVar(&file, "expectations", filepath.Join("matrix", "expectations.yaml"), "the expectations file whose measured section is written")
	f.StringVar(&flags, "flags", "", "only the runs of this grid flags digest, for a source that holds a cell under several grids")
	f.BoolVar(&check, "check", false, "write nothing: exit 1 when the file's measured section is not what the runs decide")
	addStopRule(f, &rule)
	return cmd
}

// deriveSource opens what derive reads: a catalog, or a measured directory
// or file imported into a catalog of its own, removed by done.
func deriveSource(from, dflt string) (cat *catalog.Catalog, done func(), err error) {
	if from == "" {
		from = dflt
	}
	st, err := os.Stat(from)
	if catalog.IsURL(from) || err == nil && !st.IsDir() && filepath.Ext(from) != catalog.MeasuredExt {
		c, err := openCatalog(from)
		if err != nil {
			return nil, nil, err
		}
		return c, func() { c.Close() }, nil
	}
	if err != nil {
		return nil, nil, fail(exitUsage, fmt.Errorf("--from: %w", err))
	}
	tmp, err := os.MkdirTemp("", "lockbench-derive-")
	if err != nil {
		return nil, nil, fail(exitHarness, err)
	}
	done = func() { os.RemoveAll(tmp) }
	c, err := openCatalog(filepath.Join(tmp, catalog.File))
	if err != nil {
		done()
		return nil, nil, err
	}
	done = func() { c.Close(); os.RemoveAll(tmp) }
	if _, _, err := c.Import(from); err != nil {
		done()
		return nil, nil, fail(exitUsage, err)
	}
	return c, done, nil
}
