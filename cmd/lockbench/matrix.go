package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
	"github.com/lockbench/lockbench/verdict"
	"github.com/lockbench/lockbench/workloads"
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
		runs, parallel      int
		expectations, junit string
		shardFlag, preset   string
		dryRun              bool
		out                 output
		until               bool
		rule                = matrix.DefaultStopRule
		measured            string
	)
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Run a grid of backends × nemeses × fences × workloads and hold each cell to its expectation",
		Example: `  # what the default grid would run, and what each cell is expected to give
  lockbench matrix --dry-run
  # compare three backends under pauses, with and without a fence, for CI
  lockbench matrix --backends redis,etcd,cas --nemeses none,pause --fences none,all --junit junit.xml
  # the same grid in two shards (two CI jobs), then one matrix of both
  lockbench matrix --backends redis,etcd,cas --seed 7 --shard 1/2 --results shard1
  lockbench matrix --backends redis,etcd,cas --seed 7 --shard 2/2 --results shard2
  lockbench matrix merge shard1 shard2 --junit junit.xml
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
			if parallel < 1 {
				return fail(exitUsage, fmt.Errorf("--parallel must be at least 1, got %d", parallel))
			}
			remote, err := t.ctl.onEngine()
			if err != nil {
				return err
			}
			var shard *matrix.Shard
			if shardFlag != "" {
				s, err := matrix.ParseShard(shardFlag)
				if err != nil {
					return fail(exitUsage, err)
				}
				// A random seed would differ from job to job: the shards
				// would not be slices of one grid.
				if !cmd.Flags().Changed("seed") {
					return fail(exitUsage, fmt.Errorf("--shard %s needs --seed: every shard must draw the seeds of the same grid", s))
				}
				shard = &s
			}
			exp, err := matrix.LoadExpectations(expectations)
			if err != nil {
				return fail(exitUsage, err)
			}
			exp.Under(base)
			if until {
				if err := rule.Check(); err != nil {
					return fail(exitUsage, err)
				}
				if cmd.Flags().Changed("runs") {
					return fail(exitUsage, fmt.Errorf("--runs and --until-decided: the stopping rule decides how many runs a cell gets (--min-runs, --max-runs)"))
				}
				if remote {
					return fail(exitUsage, fmt.Errorf("--until-decided reads the catalog of the machine the runs are on: run it on the engine's host (--controller local)"))
				}
			}
			if measured != "" && !until {
				return fail(exitUsage, fmt.Errorf("--measured goes with --until-decided"))
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
				// Each fault of a combination is checked.
				{"--nemeses", config.SplitFaults(axes.Nemeses), runner.Nemeses()}, {"--fences", axes.Fences, fences},
				{"--stores", axes.Stores, runner.Stores()}, {"--variants", axes.Variants, backends.VariantNames()},
				{"--on-lock-errors", axes.OnLockErrors, config.LockErrors}, {"--check-leases", axes.CheckLeases, matrix.CheckLeases},
			} {
				for _, v := range a.values {
					if !slices.Contains(a.all, v) {
						return fail(exitUsage, fmt.Errorf("%s: unknown value %q (want some of %s)", a.flag, v, strings.Join(a.all, ", ")))
					}
				}
			}
			if err := sweepAxes(&axes, check); err != nil {
				return fail(exitUsage, err)
			}
			axes.FixedFaultDuration = cmd.Flags().Changed("fault-duration")
			var cells []matrix.Cell
			var skipped []matrix.Skipped
			switch preset {
			case "":
				cells, skipped = matrix.Grid(axes, base, exp)
			case matrix.PresetMutants:
				if shard != nil {
					return fail(exitUsage, fmt.Errorf("--preset %s runs on one machine: it cannot go with --shard", preset))
				}
				if cmd.Flags().Changed("backends") {
					// The preset of the backends asked for alone.
					exp.Mutants = slices.DeleteFunc(exp.Mutants, func(m matrix.Mutant) bool { return !slices.Contains(axes.Backends, m.Backend) })
				}
				if cells, err = matrix.Mutants(exp, base); err != nil {
					return fail(exitUsage, err)
				}
			default:
				return fail(exitUsage, fmt.Errorf("unknown --preset %q (want %s)", preset, matrix.PresetMutants))
			}
			if len(cells) == 0 {
				return fail(exitUsage, fmt.Errorf("the axes leave no cell to run (%d combinations refused)", len(skipped)))
			}
			plan := matrix.Plan(cells)
			estimate := matrix.EstimateParallel(plan, runs, parallel, base)
			if until {
				// How many runs a cell takes is what the runs decide.
				fmt.Fprintf(opts.Out, "%d cells, each until decided (%d to %d runs), %d combinations left out; %d at a time, about %s per run of every cell\n",
					len(cells), rule.MinRuns, rule.MaxRuns, len(skipped), parallel, estimate.Round(time.Minute))
			} else {
				fmt.Fprintf(opts.Out, "%d cells × %d run(s), %d combinations left out; %d at a time, about %s\n", len(cells), runs, len(skipped),
					parallel, estimate.Round(time.Minute))
			}
			if shard != nil {
				plan = shard.Of(plan, base)
				estimate = matrix.EstimateParallel(plan, runs, parallel, base)
				fmt.Fprintf(opts.Out, "shard %s: %d of the %d cells; %d at a time, about %s\n", shard, len(plan), len(cells), parallel, estimate.Round(time.Minute))
			}
			if dryRun {
				pl := dryRunJSON{Cells: []plannedCell{}, Skipped: skipped, EstimateSeconds: estimate.Round(time.Minute).Seconds()}
				for _, p := range plan {
					want, why := exp.For(p.Cell)
					fmt.Fprintf(opts.Out, "  %-40s expect %-7s %s\n", p.Cell.Name(), want, why)
					pl.Cells = append(pl.Cells, plannedCell{Cell: p.Cell, Name: p.Cell.Name(), Expect: want, Reason: why})
				}
				for _, s := range skipped {
					fmt.Fprintf(opts.Out, "  %-40s left out: %s\n", s.Cell.Name(), s.Reason)
				}
				return out.emit(pl)
			}
			rec, err := t.cat.recorder(opts.Results)
			if err != nil {
				return err
			}
			defer rec.close()
			if until {
				if rec == nil {
					return fail(exitUsage, fmt.Errorf("--until-decided goes on from the runs in the catalog: it cannot run with --catalog %s", noCatalog))
				}
				if err := rec.measureInto(measured, opts.Out); err != nil {
					return err
				}
			}
			ctx, release := interruptible()
			defer release()
			if remote {
				return runOnEngine(ctx, cmd, opts, fileFlags{inputs: []string{"expectations"}, outputs: []string{"junit"}}, rec)
			}
			if parallel > 1 {
				// Built once here, not by the first runs at once.
				if err := ensureNodeImage(ctx, opts); err != nil {
					return err
				}
			}
			began := time.Now()
			dir := matrixDir(opts.Results, began)
			if shard != nil {
				dir += fmt.Sprintf("-shard%dof%d", shard.Index, shard.Count)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(exitHarness, fmt.Errorf("matrix directory: %w", err))
			}
			var results []matrix.CellResult
			if until {
				u := matrix.Until{Rule: rule, Prior: func(cell, flags string) ([]catalog.CellRun, int, error) {
					return rec.c.CellRuns(cell, flags, verdict.Compatible)
				}}
				results = matrix.RunUntilDecided(ctx, plan, parallel, base, opts, exp, u, rec.recording(runner.Run), opts.Out)
			} else {
				results = matrix.Run(ctx, plan, runs, parallel, base, opts, exp, rec.recording(runner.Run), opts.Out)
			}
			sum := matrix.Summary{Started: began.UTC(), Seconds: time.Since(began).Seconds(), Runs: runs,
				Cells: results, Skipped: skipped, Exit: matrix.Exit(results), Interrupted: ctx.Err() != nil,
				Grid: matrix.GridDigest(cells, skipped, runs, base), Expectations: exp.Digest(), Lockbench: verdict.Version()}
			if shard != nil {
				sr := &matrix.ShardRun{Shard: *shard, Dir: dir, Seconds: sum.Seconds, Cells: []int{}}
				for _, p := range plan {
					sr.Cells = append(sr.Cells, p.Index)
				}
				sum.Shard = sr
			}
			if sum.Interrupted {
				sum.Exit = exitHarness
			}
			if err := finishMatrix(opts.Out, &out, dir, junit, sum); err != nil {
				return err
			}
			if sum.Interrupted {
				return fail(exitHarness, fmt.Errorf("matrix interrupted after %d of %d cells", len(results), len(plan)))
			}
			return exitCode(sum.Exit)
		},
	}
	// Where results go and how they are reported work the same on matrix
	// and on merge.
	pf := cmd.PersistentFlags()
	t.addResults(pf)
	pf.StringVar(&junit, "junit", "", "also write JUnit XML to this file")
	out.add(pf)
	f := cmd.Flags()
	t.cat.add(f)
	f.StringSliceVar(&axes.Backends, "backends", backends.Names(), "backends to compare")
	f.StringSliceVar(&axes.Workloads, "workloads", []string{"counter"}, "workloads")
	f.StringSliceVar(&axes.Nemeses, "nemeses", []string{"none", "pause"}, "faults, one per cell; faults joined by "+config.Combine+" (pause"+config.Combine+"partition) are one cell running them all")
	f.StringSliceVar(&axes.Fences, "fences", []string{"none", "all"}, "fence modes")
	f.StringSliceVar(&axes.Stores, "stores", []string{"lockbench"}, "stores (etcd applies to the etcd backend, postgres to the postgres backend)")
	// The sweep axes: each, when given, runs every cell at each of its
	// values; when not, at the shared flag's value alone.
	f.DurationSliceVar(&axes.TTLs, "ttls", nil, "lease TTLs to sweep (default --ttl's alone); a backend that cannot keep one (etcd counts whole seconds) leaves its cells out")
	f.IntSliceVar(&axes.Concurrencies, "concurrencies", nil, "numbers of clients to sweep (default --concurrency's alone)")
	f.DurationSliceVar(&axes.RTTs, "rtts", nil, "steady client round trips to sweep (default --rtt's alone)")
	f.StringSliceVar(&axes.Variants, "variants", nil, "lock clients to sweep: "+config.Correct+" or known-broken variants (default --variant's alone); a backend without one leaves its cells out")
	f.StringSliceVar(&axes.OnLockErrors, "on-lock-errors", nil, "what clients do when the lock service cannot be reached, side by side: "+strings.Join(config.LockErrors, ",")+" (default --on-lock-error's alone)")
	f.StringSliceVar(&axes.CheckLeases, "check-leases", nil, "clients with --check-lease and without, side by side: "+strings.Join(matrix.CheckLeases, ",")+" (default --check-lease's alone)")
	// A work distribution holds commas (tail:MIN-MAX,1/N,LONG): one
	// value per flag.
	f.StringArrayVar(&axes.Works, "works", nil, "work distribution to sweep, in --work's syntax, one per flag: --works fixed:100ms --works fixed:3s (default --work's alone)")
	f.IntVar(&runs, "runs", 1, "runs per cell (a cell measured invalid runs as many times as its measurement says CI must: its R)")
	f.BoolVar(&until, "until-decided", false, "run each cell until its runs decide its class (invalid with the R runs CI needs, valid, finding, or either at --max-runs), going on from the runs the catalog holds of it")
	addStopRule(f, &rule)
	f.StringVar(&measured, "measured", "", "with --until-decided: a measured directory (one JSON line per run, one file per cell) to import first and to add each run to, so the measurement goes on from another machine")
	// Measured on 2 cores (README, "Parallel cells"): two at a time halve
	// the wall time with the verdicts of one at a time; four gain less and
	// found fewer of the expected anomalies.
	f.IntVar(&parallel, "parallel", 2, "cells run at once on the engine, each on its own network")
	f.StringVar(&expectations, "expectations", "", "expectations file (default: the built-in one)")
	f.StringVar(&shardFlag, "shard", "", "run only shard I/N of the grid's cells (balanced by estimated time; needs --seed); join the shards with matrix merge")
	f.BoolVar(&dryRun, "dry-run", false, "list the cells and their expectations, run nothing")
	f.StringVar(&preset, "preset", "", "instead of the axes' grid, run a preset: "+matrix.PresetMutants+
		" (every known-broken client variant under the fault that exposes it, beside the correct client with --check-lease as its control; expectations.yaml's mutants; with --backends, only those backends' entries)")
	t.add(f)
	completeFlags(cmd)
	if err := f.Set("time-limit", "20s"); err != nil {
		panic(err)
	}
	f.Lookup("time-limit").DefValue = "20s"
	cmd.AddCommand(newMergeCmd(&t, &junit, &out), newDeriveCmd(&t, &out))
	return cmd
}

// addStopRule adds the flags of the rule that decides a cell's class,
// which matrix --until-decided runs by and matrix derive decides by.
func addStopRule(f *pflag.FlagSet, rule *matrix.StopRule) {
	f.IntVar(&rule.MinRuns, "min-runs", rule.MinRuns, "runs without an invalid one that decide a cell valid")
	f.IntVar(&rule.MaxRuns, "max-runs", rule.MaxRuns, "runs after which a cell not decided is either")
	f.IntVar(&rule.MaxCIRuns, "max-ci-runs", rule.MaxCIRuns, "the most runs CI may give a cell decided invalid (its R)")
	f.Float64Var(&rule.Flake, "flake", rule.Flake, "the accepted chance that CI's R runs of an invalid cell all miss its anomaly")
}

// sweepAxes checks every value of the sweep axes as `run` would check its
// flag, and that none is asked for twice (two cells would share a name),
// before the grid: a typo must not silently empty a column. check is the
// base configuration with a backend and no fault, which Validate accepts.
func sweepAxes(axes *matrix.Axes, check config.Config) error {
	try := func(flag string, set func(*config.Config)) error {
		c := check
		set(&c)
		if err := runner.Validate(&c); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}
	for _, v := range axes.TTLs {
		if err := try("--ttls", func(c *config.Config) { c.TTL = config.Duration(v) }); err != nil {
			return err
		}
	}
	for _, v := range axes.Concurrencies {
		if err := try("--concurrencies", func(c *config.Config) { c.Concurrency = v }); err != nil {
			return err
		}
	}
	for _, v := range axes.RTTs {
		if err := try("--rtts", func(c *config.Config) { c.RTT = config.Duration(v) }); err != nil {
			return err
		}
	}
	works := make([]workloads.Work, len(axes.Works))
	for i, v := range axes.Works {
		w, err := workloads.ParseWork(v)
		if err != nil {
			return fmt.Errorf("--works: %w", err)
		}
		works[i] = w
	}
	for _, d := range []struct{ flag, dup string }{
		{"--ttls", repeated(axes.TTLs, nil)}, {"--concurrencies", repeated(axes.Concurrencies, nil)}, {"--rtts", repeated(axes.RTTs, nil)},
		{"--variants", repeated(axes.Variants, nil)}, {"--on-lock-errors", repeated(axes.OnLockErrors, nil)},
		{"--check-leases", repeated(axes.CheckLeases, nil)}, {"--works", repeated(works, axes.Works)},
	} {
		if d.dup != "" {
			return fmt.Errorf("%s: %s is asked for twice", d.flag, d.dup)
		}
	}
	return nil
}

// repeated is the first value that an earlier one equals (1s and 1000ms
// are equal), as given (shown[i], or the value itself without shown), or
// "" when there is none.
func repeated[T comparable](values []T, shown []string) string {
	for i, v := range values {
		if slices.Contains(values[:i], v) {
			if shown != nil {
				return shown[i]
			}
			return fmt.Sprint(v)
		}
	}
	return ""
}

// newMergeCmd is `matrix merge`: the shards of one grid as one matrix. It
// shares --results, --junit and --json with matrix.
func newMergeCmd(t *testFlags, junit *string, out *output) *cobra.Command {
	return &cobra.Command{
		Use:   "merge DIR...",
		Short: "Merge the outputs of matrix --shard I/N into one matrix.md, matrix.json and JUnit file",
		Long: `Merge finds the matrix.json of every shard under the DIRs (shard matrix
directories or any folder above them, such as downloaded CI artifacts; a
merged matrix found there is passed over) and writes one matrix under
--results. It refuses (exit 254) shards of different grids, seeds,
expectations or lockbench versions, a shard given twice, a missing or
interrupted shard. Its exit code is the merged matrix's, as matrix's.`,
		Example: `  lockbench matrix merge shards/ --results merged --junit junit.xml`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			w := out.human()
			parts, err := matrix.ReadParts(args)
			if err != nil {
				return fail(exitUsage, err)
			}
			sum, err := matrix.Merge(parts)
			if err != nil {
				return fail(exitUsage, err)
			}
			dir := matrixDir(t.results, time.Now())
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fail(exitHarness, fmt.Errorf("matrix directory: %w", err))
			}
			fmt.Fprintf(w, "merged %d shards of grid %s\n", len(sum.Shards), sum.Grid)
			if err := finishMatrix(w, out, dir, *junit, sum); err != nil {
				return err
			}
			return exitCode(sum.Exit)
		},
	}
}

// matrixDir is where a matrix started at began writes.
func matrixDir(results string, began time.Time) string {
	return filepath.Join(results, "matrix", began.UTC().Format(rundir.StartLayout))
}

// finishMatrix writes a matrix's files, says which cells missed their
// expectation, and prints the JSON summary when asked.
func finishMatrix(w io.Writer, out *output, dir, junit string, sum matrix.Summary) error {
	if err := matrix.Write(dir, sum); err != nil {
		return fail(exitHarness, err)
	}
	if junit != "" {
		if err := matrix.WriteJUnit(junit, sum); err != nil {
			return fail(exitHarness, err)
		}
	}
	for _, r := range sum.Cells {
		if r.Outcome != matrix.Met {
			fmt.Fprintf(w, "%s: %s (expected %s: %s)\n", r.Cell.Name(), r.Outcome, r.Expect, r.Reason)
		}
	}
	fmt.Fprintf(w, "matrix: %d cells in %s, exit %d\nresults: %s\n", len(sum.Cells),
		(time.Duration(sum.Seconds) * time.Second).Round(time.Second), sum.Exit, filepath.Join(dir, rundir.MatrixMarkdown))
	return out.emit(matrixJSON{Summary: sum, Dir: dir, Markdown: filepath.Join(dir, rundir.MatrixMarkdown),
		JSON: filepath.Join(dir, rundir.MatrixJSON), JUnit: junit})
}
