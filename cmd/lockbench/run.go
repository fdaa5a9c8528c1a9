package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/link"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
	"github.com/lockbench/lockbench/workloads"
)

// testFlags are the knobs of a test that `run` and `matrix` share.
type testFlags struct {
	cfg                                                         config.Config
	fence, method, mirror, results, work, think                 string
	ttl, limit, interval, faultFor, workMax, opTimeout, checkTO time.Duration
	restartDelay, pgIdle, linkDelay, rtt                        time.Duration
	stop                                                        bool
	ctl                                                         controllerFlag
	cat                                                         catalogFlag
}

func (t *testFlags) add(f *pflag.FlagSet) {
	f.IntVar(&t.cfg.Concurrency, "concurrency", config.DefaultConcurrency, "number of clients, each in its own container")
	f.IntVar(&t.cfg.Nodes, "nodes", 5, "independent Redis nodes for redlock")
	f.DurationVar(&t.ttl, "ttl", config.DefaultTTL, "lease time to live")
	f.DurationVar(&t.limit, "time-limit", 30*time.Second, "how long the workload runs")
	f.Int64Var(&t.cfg.Seed, "seed", 0, "seed of every random choice (default random; always printed and stored)")
	f.DurationVar(&t.interval, "nemesis-interval", 5*time.Second, "mean quiet time between faults")
	f.DurationVar(&t.faultFor, "fault-duration", 0, "how long each fault lasts (default 2×ttl)")
	f.StringVar(&t.cfg.PauseTarget, "target", "holder", "whom faults strike: clients (pause, link): holder, random, all; lock-service nodes (pause-node, kill, clock): one, minority, majority, leader, all, or holder and random, which draw one of those (holder once a client holds the lock)")
	// --target was --pause-target before link faults struck clients too.
	f.StringVar(&t.cfg.PauseTarget, "pause-target", "holder", "the same as --target")
	f.Lookup("pause-target").Hidden = true
	f.StringSliceVar(&t.cfg.Link, "link", nil, "shapes the link fault draws from, one per injection: "+strings.Join(link.Shapes, ", ")+" (default all)")
	f.StringVar(&t.cfg.LinkPath, "link-path", "", "links the link fault strikes: "+link.Both+" (the default), "+link.Lock+" (to the lock service), "+link.Store+" (to the store)")
	f.DurationVar(&t.linkDelay, "link-delay", 0, "how long the link fault's delay holds each request (give or take half) and its slow-close holds each close (default the ttl)")
	f.DurationVar(&t.rtt, "rtt", 0, "a steady round trip on every client link for the whole run, half each way (default none)")
	f.StringVar(&t.cfg.PowerTarget, "power-target", "all", "service nodes power-loss cuts at once: one, majority, all")
	f.DurationVar(&t.restartDelay, "restart-delay", 0, "how long a killed node stays down before it is restarted")
	f.StringVar(&t.cfg.RedisPersistence, "redis-persistence", "none", "Redis persistence: none, everysec, always (AOF)")
	f.StringVar(&t.cfg.PgLock, "pg-lock", "", "PostgreSQL advisory lock: "+locks.PgSession+" (pg_advisory_lock on a dedicated session; the default) or "+locks.PgXact+" (pg_advisory_xact_lock in an open transaction; the default with --store postgres)")
	f.DurationVar(&t.pgIdle, "pg-idle-timeout", 0, "PostgreSQL's idle_session_timeout and idle_in_transaction_session_timeout (default off): they also end the session of a holder that is merely silent")
	f.DurationVar(&t.workMax, "work-max", config.DefaultWorkMax, "upper bound of the random work inside the critical section: the same as --work uniform:0-MAX")
	f.StringVar(&t.think, "think", "", "distribution of the time a client waits between a release and its next acquire, in --work's syntax (default none: it acquires again at once)")
	f.StringVar(&t.work, "work", "", "distribution of the work inside the critical section: uniform:MIN-MAX, fixed:D, or tail:MIN-MAX,1/N,LONG (one section in N works LONG) (default "+config.DefaultWork+")")
	f.StringVar(&t.cfg.Variant, "variant", config.Correct, "lock client: "+config.Correct+", or a known-broken variant of the backend's client (see the README's variants table)")
	f.StringVar(&t.cfg.Failpoint, "failpoint", "", "strike clients at this point of their code instead of at random moments (pause, kill-client, link): "+
		workloads.FailSection+" (read done, work ahead), "+locks.FailAcquired+" (lock granted, Acquire not returned), "+
		locks.FailBeforeDelete+" (releasing, delete not sent), "+locks.FailReplyHeld+" (ZooKeeper: the reply to the contender's create held unread, then lost)")
	f.StringVar(&t.cfg.OnLockError, "on-lock-error", config.FailClosed, "when the lock service cannot be reached: closed (skip the section) or open (write without the lock)")
	f.DurationVar(&t.opTimeout, "op-timeout", time.Second, "timeout of each store request and release")
	f.BoolVar(&t.cfg.CheckLease, "check-lease", false, "clients skip the write when they already know their lease is lost (narrows, does not close, the window)")
	f.DurationVar(&t.checkTO, "check-timeout", time.Minute, "bound on the linearizability search; past it the verdict is unknown")
	f.BoolVar(&t.stop, stopFlag, false, "end the run, as at its time limit, once the live count has seen a write the store certainly accepted from a stale holder; "+
		fmt.Sprintf("the truncated run counts only if judged invalid (else it is an error: run exits %d, matrix counts no verdict) and stays out of latency and throughput figures. ", exitHarness)+
		"It serves only stale writes: in matrix it applies to every cell, and a cell whose runs never see one (a fence, --store etcd or postgres, a lock without tokens) runs to its time limit")
	addImageFlags(f, &t.method, &t.mirror)
	t.ctl.add(f)
}

// addResults adds --results, which `matrix` shares with its subcommands.
func (t *testFlags) addResults(f *pflag.FlagSet) {
	f.StringVar(&t.results, "results", "results", "root of the results tree")
}

func addImageFlags(f *pflag.FlagSet, method, mirror *string) {
	f.StringVar(method, "image-method", "auto", "how to make the Debian base: auto, dockerfile (FROM debian:bookworm-slim), debootstrap (no registry)")
	f.StringVar(mirror, "debian-mirror", envOr("LOCKBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian"), "Debian mirror for debootstrap")
}

// config completes the configuration from the flags; it does not validate
// the choice of backend, workload and faults, which `matrix` varies.
func (t *testFlags) config(cmd *cobra.Command) (config.Config, runner.Options, error) {
	cfg := t.cfg
	if !cmd.Flags().Changed("seed") {
		cfg.Seed = rand.Int64N(1 << 53)
	}
	faultFor := t.faultFor
	if !cmd.Flags().Changed("fault-duration") {
		faultFor = 2 * t.ttl
	}
	cfg.Fence = store.Fence(t.fence)
	cfg.TTL, cfg.TimeLimit, cfg.NemesisInterval = config.Duration(t.ttl), config.Duration(t.limit), config.Duration(t.interval)
	cfg.FaultDuration = config.Duration(faultFor)
	switch {
	case t.work != "" && cmd.Flags().Changed("work-max"):
		return cfg, runner.Options{}, fail(exitUsage, fmt.Errorf("--work-max is --work uniform:0-MAX: give one of them"))
	case t.work != "":
		cfg.Work = t.work
	default:
		cfg.Work = workloads.UniformWork(t.workMax)
	}
	cfg.Think = t.think
	cfg.OpTimeout, cfg.CheckTimeout = config.Duration(t.opTimeout), config.Duration(t.checkTO)
	cfg.RestartDelay = config.Duration(t.restartDelay)
	cfg.PgIdleTimeout = config.Duration(t.pgIdle)
	cfg.LinkDelay, cfg.RTT = config.Duration(t.linkDelay), config.Duration(t.rtt)
	m, err := images.ParseMethod(t.method)
	if err != nil {
		return cfg, runner.Options{}, fail(exitUsage, err)
	}
	bin, err := os.Executable()
	if err != nil {
		return cfg, runner.Options{}, fail(exitHarness, fmt.Errorf("find the lockbench binary: %w", err))
	}
	return cfg, runner.Options{Results: t.results, Binary: bin, ImageMethod: m, Mirror: t.mirror, Out: os.Stdout, Command: os.Args,
		Controller: controllerOf(), StopAtFirstAnomaly: t.stop}, nil
}

// stopSignals are the ways to end lockbench that can be caught: Ctrl-C,
// kill, the terminal closing (SIGHUP), and output to a closed pipe
// (`lockbench run | head`). Each must end the run through its teardown, so
// none is left to its default action, which would kill the process with the
// cluster still up. While SIGPIPE is being notified, a write to the closed
// pipe fails with EPIPE instead of killing the process, so the output the
// teardown still prints cannot stop it.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE}

// interruptible returns a context that any of stopSignals ends, saying
// what happens next; the returned func releases it. Signals that come
// while the run tears down are swallowed: a second Ctrl-C must not cut the
// teardown short.
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	finished := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel()
			// Stderr may be the closed pipe too: the message is best effort.
			fmt.Fprintf(os.Stderr, "interrupted (%v): healing faults, saving the history, removing containers…\n", sig)
			for {
				select {
				case <-sigs:
				case <-finished:
					return
				}
			}
		case <-finished:
		}
	}()
	return ctx, func() {
		close(finished)
		signal.Stop(sigs)
		// What is left to print is the verdict's last lines: a closed
		// pipe costs those, not the exit status.
		signal.Ignore(syscall.SIGPIPE)
		cancel()
	}
}

// stopFlag is --stop-at-first-anomaly: when a run ends, not what it tests,
// so --replay allows it.
const stopFlag = "stop-at-first-anomaly"

// replayable are the flags --replay allows: where and how to run, never
// what to test, which comes from the replayed run's test.json.
var replayable = []string{"replay", "results", "image-method", "debian-mirror", "test-count", "until-invalid", "json", "leave-running", "controller", stopFlag}

func newRunCmd() *cobra.Command {
	var (
		t            testFlags
		replay       string
		count        int
		untilInvalid bool
		leave        bool
		out          output
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one test: bring the lock service up, inject faults, check the history",
		Example: `  # the stale-holder failure: a paused holder writes after its lease expired
  lockbench run --backend redis --nemesis pause --fence none --time-limit 20s
  # the same with a fence: the store rejects the stale token
  lockbench run --backend redis --nemesis pause --fence all
  # a summary for scripts on stdout, the cluster kept up to look at
  lockbench run --nemesis kill --json --leave-running > summary.json
  # run a stored test again, five times
  lockbench run --replay results/redis-counter-pause-fence-none/20261202T094515.549Z --test-count 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, opts, err := t.config(cmd)
			if err != nil {
				return err
			}
			opts.Out, opts.LeaveRunning = out.human(), leave
			if count < 1 {
				return fail(exitUsage, fmt.Errorf("--test-count must be at least 1, got %d", count))
			}
			if leave && count > 1 {
				return fail(exitUsage, fmt.Errorf("--leave-running keeps one run's cluster up: it cannot go with --test-count %d", count))
			}
			if replay != "" {
				if cfg, err = replayConfig(cmd, replay); err != nil {
					return err
				}
			}
			if err := runner.Validate(&cfg); err != nil {
				return fail(exitUsage, err)
			}
			for _, w := range runner.Warnings(&cfg) {
				fmt.Fprintf(os.Stderr, "warning: %s\n", w)
			}
			remote, err := t.ctl.onEngine()
			if err != nil {
				return err
			}
			rec, err := t.cat.recorder(opts.Results)
			if err != nil {
				return err
			}
			defer rec.close()
			ctx, release := interruptible()
			defer release()
			if remote {
				return runOnEngine(ctx, cmd, opts, fileFlags{inputs: []string{"replay"}}, rec)
			}
			var reps []*rundir.Results
			for i := range count {
				run := cfg
				// A replay repeats its seed; fresh runs each get the next.
				if replay == "" {
					run.Seed += int64(i)
				}
				if count > 1 {
					fmt.Fprintf(opts.Out, "test %d of %d (seed %d)\n", i+1, count, run.Seed)
				}
				rep, err := runner.Run(ctx, run, opts)
				if rep != nil {
					rep.Print(opts.Out)
					reps = append(reps, rep)
					// A judged run is recorded even when the harness
					// failed after its judgment.
					if rerr := rec.record(rep.Dir); rerr != nil {
						summarize(opts.Out, reps, count)
						return errors.Join(printSeries(&out, reps, count), rerr)
					}
				}
				switch {
				case errors.Is(err, config.ErrUsage):
					return fail(exitUsage, err)
				case err != nil:
					summarize(opts.Out, reps, count)
					return errors.Join(printSeries(&out, reps, count), fail(exitHarness, err))
				}
				if untilInvalid && rep.Verdict == checkers.Invalid {
					break
				}
			}
			summarize(opts.Out, reps, count)
			if err := printSeries(&out, reps, count); err != nil {
				return err
			}
			return verdictExit(worst(reps))
		},
	}
	f := cmd.Flags()
	f.StringVar(&t.cfg.Backend, "backend", backends.Names()[0], "lock service: "+backends.Help())
	f.StringVar(&t.cfg.Workload, "workload", "counter", "workload: counter, set")
	f.StringSliceVar(&t.cfg.Nemesis, "nemesis", []string{"none"}, "faults, comma separated: "+strings.Join(runner.Nemeses(), ", "))
	f.StringVar(&t.fence, "fence", "none", "what the store checks fencing tokens on: none, writes, all")
	f.StringVar(&t.cfg.Store, "store", "lockbench", "where the counter lives: lockbench (the fenced store), etcd (with --backend etcd: writes are transactions on lock ownership) or postgres (with --backend postgres: writes commit in the transaction holding the lock)")
	f.StringVar(&replay, "replay", "", "run again the configuration and seed stored in this run directory's test.json")
	f.IntVar(&count, "test-count", 1, "run the test this many times (fresh runs: seeds seed, seed+1, …; a replay repeats its seed), then summarize")
	f.BoolVar(&untilInvalid, "until-invalid", false, "with --test-count, stop at the first invalid run")
	f.BoolVar(&leave, "leave-running", false, "keep the cluster up after the run (faults healed) to look at it; remove it with lockbench clean --run ID")
	out.add(f)
	t.add(f)
	t.addResults(f)
	t.cat.add(f)
	completeFlags(cmd)
	if err := cmd.RegisterFlagCompletionFunc("replay", completeRunDirs); err != nil {
		panic(err)
	}
	return cmd
}

// replayConfig is the configuration stored in dir's test.json, seed
// included. Flags that choose what to test are refused alongside it: the
// replay would silently not be one.
func replayConfig(cmd *cobra.Command, dir string) (config.Config, error) {
	var clash []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains(replayable, f.Name) {
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return config.Config{}, fail(exitUsage, fmt.Errorf("--replay takes the test's configuration from %s; %s cannot be given with it",
			filepath.Join(dir, rundir.TestFile), strings.Join(clash, ", ")))
	}
	test, _, err := rundir.ReadTest(dir)
	if err != nil {
		return config.Config{}, fail(exitUsage, err)
	}
	return test.Config, nil
}

// printSeries prints the runs' JSON summary, when --json asked for one:
// one run's summary, or with --test-count the series and its worst
// verdict.
func printSeries(out *output, reps []*rundir.Results, count int) error {
	if count == 1 {
		if len(reps) == 0 {
			return nil
		}
		return out.emit(newRunJSON(reps[0]))
	}
	s := seriesJSON{Verdict: worst(reps), Count: count, Runs: []runJSON{}}
	for _, r := range reps {
		s.Runs = append(s.Runs, newRunJSON(r))
	}
	return out.emit(s)
}

// summarize prints the verdicts of a --test-count series.
func summarize(w io.Writer, reps []*rundir.Results, count int) {
	if count == 1 {
		return
	}
	n := map[checkers.Verdict]int{}
	for _, r := range reps {
		n[r.Verdict]++
	}
	fmt.Fprintf(w, "\ntests: %d of %d run: %d valid, %d invalid, %d unknown\n", len(reps), count,
		n[checkers.Valid], n[checkers.Invalid], len(reps)-n[checkers.Valid]-n[checkers.Invalid])
	for i, r := range reps {
		fmt.Fprintf(w, "  %d  seed %-17d %-8s %s\n", i+1, r.Seed, r.Verdict, r.Dir)
	}
}

// worst is the verdict of a series: invalid if any run was, else unknown
// if any run was neither valid nor invalid, else valid.
func worst(reps []*rundir.Results) checkers.Verdict {
	v := checkers.Valid
	for _, r := range reps {
		switch {
		case r.Verdict == checkers.Invalid:
			return checkers.Invalid
		case r.Verdict != checkers.Valid:
			v = checkers.Unknown
		}
	}
	return v
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
