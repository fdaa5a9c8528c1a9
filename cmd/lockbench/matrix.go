package main

import (
	"fmt"
	"github.com/lockbench/lockbench/rundir"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// matrixJSON is a matrix as --json prints it: matrix.json's fields and
// where its files are.
type matrixJSON struct {
	matrix.Summary
	Dir      string `json:"dir"`
	Markdown string `json:"matrix_md"`
	JSON     string `json:"matrix_json"`
	JUnit    string `json:"junit,omitempty"`
}

// dryRunJSON is `matrix --dry-run` as --json prints it.
type dryRunJSON struct {
	Cells           []plannedCell    `json:"cells"`
	Skipped         []matrix.Skipped `json:"skipped"`
	EstimateSeconds float64          `json:"estimate_seconds"`
}

type plannedCell struct {
	matrix.Cell
	Name   string `json:"name"`
	Expect string `json:"expect"`
	Reason string `json:"reason"`
}

func newMatrixCmd() *cobra.Command {
	var (
		t                   testFlags
		axes                matrix.Axes
		runs                int
		expectations, junit string
		dryRun              bool
		out                 output
	)
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Run a grid of backends × nemeses × fences × workloads and hold each cell to its expectation",
		Example: `  # what the default grid would run, and what each cell is expected to give
  lockbench matrix --dry-run
  # compare three backends under pauses, with and without a fence, for CI
  lockbench matrix --backends redis,etcd,cas --nemeses none,pause --fences none,all --junit junit.xml
  # the summary as JSON on stdout
  lockbench matrix --backends redis --nemeses pause --json > matrix.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			base, opts, err := t.config(cmd)
			if err != nil {
				return err
			}
			opts.Out = out.human()
			if runs < 1 {
				return fail(exitUsage, fmt.Errorf("--runs must be at least 1, got %d", runs))
			}
			exp, err := matrix.LoadExpectations(expectations)
			if err != nil {
				return fail(exitUsage, err)
			}
			// The shared knobs and every axis value are checked before the
			// grid: a typo must not silently empty a column.
			check := base
			check.Backend, check.Workload, check.Nemesis, check.Store, check.Fence = backends.Names()[0], config.Workloads[0], []string{config.NoFault}, config.DefaultStore, store.FenceNone
			if err := runner.Validate(&check); err != nil {
				return fail(exitUsage, err)
			}
			for _, a := range []struct {
				flag        string
				values, all []string
			}{
				{"--backends", axes.Backends, backends.Names()}, {"--workloads", axes.Workloads, config.Workloads},
				{"--nemeses", axes.Nemeses, runner.Nemeses()}, {"--fences", axes.Fences, fences},
				{"--stores", axes.Stores, runner.Stores()},
			} {
				for _, v := range a.values {
					if !slices.Contains(a.all, v) {
						return fail(exitUsage, fmt.Errorf("%s: unknown value %q (want some of %s)", a.flag, v, strings.Join(a.all, ", ")))
					}
				}
			}
			cells, skipped := matrix.Grid(axes, base)
			if len(cells) == 0 {
				return fail(exitUsage, fmt.Errorf("the axes leave no cell to run (%d combinations refused)", len(skipped)))
			}
			estimate := time.Duration(len(cells)*runs) * (base.TimeLimit.D() + 15*time.Second)
			fmt.Fprintf(opts.Out, "%d cells × %d run(s), %d combinations left out; about %s\n", len(cells), runs, len(skipped), estimate.Round(time.Minute))
			if dryRun {
				plan := dryRunJSON{Cells: []plannedCell{}, Skipped: skipped, EstimateSeconds: estimate.Round(time.Minute).Seconds()}
				for _, c := range cells {
					want, why := exp.For(c)
					fmt.Fprintf(opts.Out, "  %-40s expect %-7s %s\n", c.Name(), want, why)
					plan.Cells = append(plan.Cells, plannedCell{Cell: c, Name: c.Name(), Expect: want, Reason: why})
				}
				for _, s := range skipped {
					fmt.Fprintf(opts.Out, "  %-40s left out: %s\n", s.Cell.Name(), s.Reason)
				}
				return out.emit(plan)
			}
			dir := filepath.Join(opts.Results, "matrix", time.Now().UTC().Format("20060102T150405.000Z"))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(exitHarness, fmt.Errorf("matrix directory: %w", err))
			}
			ctx, release := interruptible()
			defer release()
			began := time.Now()
			results := matrix.Run(ctx, cells, runs, base, opts, exp, runner.Run, opts.Out)
			sum := matrix.Summary{Started: began.UTC(), Seconds: time.Since(began).Seconds(), Runs: runs,
				Cells: results, Skipped: skipped, Exit: matrix.Exit(results)}
			if ctx.Err() != nil {
				sum.Exit = exitHarness
			}
			if err := matrix.Write(dir, sum); err != nil {
				return fail(exitHarness, err)
			}
			if junit != "" {
				if err := matrix.WriteJUnit(junit, sum); err != nil {
					return fail(exitHarness, err)
				}
			}
			for _, r := range results {
				if r.Outcome != matrix.Met {
					fmt.Fprintf(opts.Out, "%s: %s (expected %s: %s)\n", r.Cell.Name(), r.Outcome, r.Expect, r.Reason)
				}
			}
			fmt.Fprintf(opts.Out, "matrix: %d cells in %s, exit %d\nresults: %s\n", len(results),
				(time.Duration(sum.Seconds) * time.Second).Round(time.Second), sum.Exit, filepath.Join(dir, "matrix.md"))
			if err := out.emit(matrixJSON{Summary: sum, Dir: dir, Markdown: filepath.Join(dir, "matrix.md"),
				JSON: filepath.Join(dir, rundir.MatrixJSON), JUnit: junit}); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return fail(exitHarness, fmt.Errorf("matrix interrupted after %d of %d cells", len(results), len(cells)))
			}
			return exitCode(sum.Exit)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&axes.Backends, "backends", backends.Names(), "backends to compare")
	f.StringSliceVar(&axes.Workloads, "workloads", []string{"counter"}, "workloads")
	f.StringSliceVar(&axes.Nemeses, "nemeses", []string{"none", "pause"}, "faults, one per cell")
	f.StringSliceVar(&axes.Fences, "fences", []string{"none", "all"}, "fence modes")
	f.StringSliceVar(&axes.Stores, "stores", []string{"lockbench"}, "stores (etcd applies to the etcd backend, postgres to the postgres backend)")
	f.IntVar(&runs, "runs", 1, "runs per cell")
	f.StringVar(&expectations, "expectations", "", "expectations file (default: the built-in one)")
	f.StringVar(&junit, "junit", "", "also write JUnit XML to this file")
	f.BoolVar(&dryRun, "dry-run", false, "list the cells and their expectations, run nothing")
	out.add(f)
	t.add(f)
	completeFlags(cmd)
	if err := f.Set("time-limit", "20s"); err != nil {
		panic(err)
	}
	f.Lookup("time-limit").DefValue = "20s"
	return cmd
}
