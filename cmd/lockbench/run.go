package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

func newRunCmd() *cobra.Command {
	var (
		cfg                                                         runner.Config
		fence, method, mirror, results                              string
		ttl, limit, interval, pauseFor, workMax, opTimeout, checkTO time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one test: bring the lock service up, inject faults, check the history",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("seed") {
				cfg.Seed = rand.Int64N(1 << 53)
			}
			if !cmd.Flags().Changed("pause-duration") {
				pauseFor = 2 * ttl
			}
			cfg.Fence = store.Fence(fence)
			cfg.TTL, cfg.TimeLimit, cfg.NemesisInterval = runner.Duration(ttl), runner.Duration(limit), runner.Duration(interval)
			cfg.PauseDuration, cfg.WorkMax = runner.Duration(pauseFor), runner.Duration(workMax)
			cfg.OpTimeout, cfg.CheckTimeout = runner.Duration(opTimeout), runner.Duration(checkTO)
			if err := cfg.Validate(); err != nil {
				return fail(exitUsage, err)
			}
			m, err := images.ParseMethod(method)
			if err != nil {
				return fail(exitUsage, err)
			}
			bin, err := os.Executable()
			if err != nil {
				return fail(exitHarness, fmt.Errorf("find the lockbench binary: %w", err))
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			finished := make(chan struct{})
			defer close(finished)
			go func() {
				select {
				case <-ctx.Done():
					// stop() also ends ctx, after finished is closed.
					select {
					case <-finished:
						return
					default:
					}
					fmt.Fprintln(os.Stderr, "interrupted: healing faults, saving the history, removing containers…")
				case <-finished:
				}
			}()
			rep, err := runner.Run(ctx, cfg, runner.Options{
				Results: results, Binary: bin, ImageMethod: m, Mirror: mirror, Out: os.Stdout,
			})
			if rep != nil {
				rep.Print(os.Stdout)
			}
			switch {
			case errors.Is(err, runner.ErrUsage):
				return fail(exitUsage, err)
			case err != nil:
				return fail(exitHarness, err)
			}
			return verdictExit(rep.Verdict)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Backend, "backend", "redis", "lock service: redis, redlock, redis-sentinel, etcd, cas (no lock: conditional writes), nolock (broken control)")
	f.StringVar(&cfg.Store, "store", "lockbench", "where the counter lives: lockbench (the fenced store) or etcd (with --backend etcd: writes are transactions on lock ownership)")
	f.IntVar(&cfg.Nodes, "nodes", 5, "independent Redis nodes for redlock")
	f.StringVar(&cfg.Workload, "workload", "counter", "workload: counter")
	f.StringSliceVar(&cfg.Nemesis, "nemesis", []string{"none"}, "faults, comma separated: none, pause")
	f.StringVar(&fence, "fence", "none", "what the store checks fencing tokens on: none, writes, all")
	f.DurationVar(&ttl, "ttl", 2*time.Second, "lease time to live")
	f.DurationVar(&limit, "time-limit", 30*time.Second, "how long the workload runs")
	f.IntVar(&cfg.Concurrency, "concurrency", 5, "number of clients, each in its own container")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed of every random choice (default random; always printed and stored)")
	f.StringVar(&results, "results", "results", "root of the results tree")
	f.DurationVar(&interval, "nemesis-interval", 5*time.Second, "mean quiet time between faults")
	f.DurationVar(&pauseFor, "pause-duration", 0, "how long a paused client stays frozen (default 2×ttl)")
	f.DurationVar(&workMax, "work-max", 200*time.Millisecond, "upper bound of the random work inside the critical section")
	f.DurationVar(&opTimeout, "op-timeout", time.Second, "timeout of each store request and release")
	f.BoolVar(&cfg.CheckLease, "check-lease", false, "clients skip the write when they already know their lease is lost (narrows, does not close, the window)")
	f.DurationVar(&checkTO, "check-timeout", time.Minute, "bound on the linearizability search; past it the verdict is unknown")
	addImageFlags(f, &method, &mirror)
	return cmd
}

func verdictExit(v checkers.Verdict) error {
	switch v {
	case checkers.Valid:
		return nil
	case checkers.Invalid:
		return exitCode(exitInvalid)
	default:
		return exitCode(exitUnknown)
	}
}
