package matrix

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/runner"
	"github.com/lockbench/lockbench/store"
)

// Cell is one combination of the grid, or one client of the mutants
// preset (a known-broken variant or the correct client as its control,
// under the fault that exposes the variant).
type Cell struct {
	Backend  string `json:"backend"`
	Workload string `json:"workload"`
	Nemesis  string `json:"nemesis"`
	Fence    string `json:"fence"`
	Store    string `json:"store"`
	// Mutant is set on the cells of the mutants preset.
	Mutant *Mutant `json:"mutant,omitempty"`
	// Variant is the client this cell runs: Mutant's variant, or the
	// correct client as its control; on a grid cell, its --variants value.
	Variant string `json:"variant,omitempty"`
	// The sweep axes (--ttls, --concurrencies, --rtts, --on-lock-errors,
	// --check-leases, --works): Grid sets every one, from its axis or
	// the shared flag. Unset, a field runs the base configuration's value
	// and names and matches as the flag's default.
	// RTT (a duration as time.Duration prints it) and CheckLease (on or
	// off) are strings, not a duration and a bool, so that their zero is
	// not a value: a cell at --rtt 0 below a base at 20ms runs 0.
	TTL         config.Duration `json:"ttl,omitempty"`
	Concurrency int             `json:"concurrency,omitempty"`
	RTT         string          `json:"rtt,omitempty"`
	OnLockError string          `json:"on_lock_error,omitempty"`
	CheckLease  string          `json:"check_lease,omitempty"`
	Work        string          `json:"work,omitempty"`
	// FaultDuration is set where the cell's TTL is not the base's and
	// --fault-duration was left to its default of two TTLs: the cell's
	// faults last two of its own.
	FaultDuration config.Duration `json:"fault_duration,omitempty"`
	// Aimed is set on the aimed twin of a grid cell: the same cell run
	// with the entry's overrides, so the fault lands where it decides.
	Aimed *Aimed `json:"aimed,omitempty"`
}

// Name is how matrix.md and JUnit name the cell: its backend, workload,
// fault, and fence or store, then each sweep axis whose value is not its
// flag's default (axisNames), then an aimed twin's label.
func (c Cell) Name() string {
	if c.Mutant != nil {
		return fmt.Sprintf("%s/%s/%s", c.Backend, c.Variant, c.Mutant.exposure())
	}
	if c.Aimed != nil {
		random := c
		random.Aimed = nil
		return random.Name() + "/aimed-" + c.Aimed.Label
	}
	name := fmt.Sprintf("%s/%s/%s/fence-%s", c.Backend, c.Workload, c.Nemesis, c.Fence)
	if c.Store != config.DefaultStore {
		name = fmt.Sprintf("%s/%s/%s/store-%s", c.Backend, c.Workload, c.Nemesis, c.Store)
		// A store the lock service keeps is its own fence, and every
		// backend refuses another: such a cell is only ever left out,
		// and its name says why it differs from its fence-none twin.
		if c.Fence != string(store.FenceNone) {
			name += "/fence-" + c.Fence
		}
	}
	for _, a := range c.axisNames() {
		name += "/" + a
	}
	return name
}

// Axes are the values a grid spans. An empty sweep axis (TTLs and those
// after it) is the base configuration's value alone.
type Axes struct {
	Backends, Workloads, Nemeses, Fences, Stores []string
	TTLs, RTTs                                   []time.Duration
	Concurrencies                                []int
	Variants, OnLockErrors                       []string
	// CheckLeases are CheckLeaseOn and CheckLeaseOff.
	CheckLeases []string
	Works       []string
	// FixedFaultDuration is set when --fault-duration was given: every
	// cell's faults last that long, whatever its TTL.
	FixedFaultDuration bool
}

// Skipped is a combination the grid leaves out, and why.
type Skipped struct {
	Cell   Cell   `json:"cell"`
	Reason string `json:"reason"`
}

// Grid expands the axes into cells, leaving out the combinations `run`
// refuses (a fence for a lock without tokens, --store etcd without etcd, a
// fault with nothing to act on, a TTL the backend cannot keep), for the
// reason it gives. Right after each cell that the rules leave to chance
// (either) and that an entry of exp's aimed matches comes its aimed twin;
// exp nil adds none. base supplies everything else a run needs.
func Grid(a Axes, base config.Config, exp *Expectations) ([]Cell, []Skipped) {
	var cells []Cell
	var skipped []Skipped
	keep := func(c Cell) bool {
		cfg := c.config(base)
		if err := runner.Validate(&cfg); err != nil {
			skipped = append(skipped, Skipped{Cell: c, Reason: strings.TrimPrefix(err.Error(), config.ErrUsage.Error()+": ")})
			return false
		}
		cells = append(cells, c)
		return true
	}
	for _, b := range a.Backends {
		for _, w := range a.Workloads {
			for _, n := range a.Nemeses {
				for _, st := range a.Stores {
					for _, f := range a.Fences {
						for _, c := range a.sweep(Cell{Backend: b, Workload: w, Nemesis: n, Fence: f, Store: st}, base) {
							if !keep(c) || exp == nil {
								continue
							}
							for _, twin := range exp.twins(c, a, base) {
								keep(twin)
							}
						}
					}
				}
			}
		}
	}
	return cells, skipped
}

func (c Cell) config(base config.Config) config.Config {
	cfg := base
	cfg.Backend, cfg.Workload, cfg.Nemesis = c.Backend, c.Workload, []string{c.Nemesis}
	cfg.Fence, cfg.Store = store.Fence(c.Fence), c.Store
	if c.Mutant != nil {
		c.Mutant.apply(&cfg)
		cfg.Variant = c.Variant
		return cfg
	}
	c.applyAxes(&cfg)
	if c.Aimed != nil {
		c.Aimed.apply(&cfg)
	}
	if c.FaultDuration != 0 {
		cfg.FaultDuration = c.FaultDuration
	}
	return cfg
}

// RunResult is one run of a cell.
type RunResult struct {
	Verdict checkers.Verdict `json:"verdict"`
	Dir     string           `json:"dir"`
	Seed    int64            `json:"seed"`
	// FirstAnomaly is when the first anomaly happened, in seconds since
	// the run began; absent when there was none.
	FirstAnomaly *float64 `json:"first_anomaly_s,omitempty"`
	// CyclesPerSec is 0 for a run Stopped at its first anomaly, whose
	// cycles over a cut-short run measure nothing comparable.
	CyclesPerSec float64 `json:"cycles_per_s"`
	// Stopped is set when --stop-at-first-anomaly ended the run early.
	Stopped bool   `json:"stopped_at_first_anomaly,omitempty"`
	Error   string `json:"error,omitempty"`
	// Evidence is checkers.WeakEvidence for a valid run whose faults never
	// put a holder past its lease.
	Evidence string `json:"evidence,omitempty"`
	// Invalid are the checkers that judged the run invalid.
	Invalid []string `json:"invalid,omitempty"`
}

// Outcomes of a cell against its expectation.
const (
	Met          = "met"
	Contradicted = "contradicted"
	Undecided    = "unknown"
	// Unexercised: every run was valid, but no fault ever reached a
	// holder, so the runs could not have shown what the cell is about.
	Unexercised = "unexercised"
)

// CellResult is a cell's runs and what they say against the expectation.
type CellResult struct {
	// Index is the cell's place in the grid.
	Index         int         `json:"index"`
	Cell          Cell        `json:"cell"`
	Expect        string      `json:"expect"`
	Reason        string      `json:"reason"`
	Runs          []RunResult `json:"runs"`
	Outcome       string      `json:"outcome"`
	DetectionRate float64     `json:"detection_rate"`
	Seconds       float64     `json:"seconds"`
	// Decision is the cell's class under --until-decided, from Prior (what
	// earlier invocations measured) and Runs together.
	Decision *Decision `json:"decision,omitempty"`
	Prior    Tally     `json:"prior"`
	// Error is why the cell could not run.
	Error string `json:"error,omitempty"`
}

// Runner runs one test; runner.Run in production.
type Runner func(ctx context.Context, cfg config.Config, opts runner.Options) (*rundir.Results, error)

// Run runs every cell runs times, parallel cells at a time (each run on
// its own network; 1 leaves the machine's cores to one cluster), and judges
// each cell as soon as its runs are done. The results are in the order of
// cells, whatever order they finished in. Run i of a cell has seed
// SeedOf(base.Seed, cell) + i, whichever shard runs it.
func Run(ctx context.Context, cells []Planned, runs, parallel int, base config.Config, opts runner.Options, exp *Expectations, run Runner, log io.Writer) []CellResult {
	return runAll(ctx, cells, parallel, opts, log, func(ctx context.Context, p Planned, o runner.Options, l io.Writer) CellResult {
		return runCell(ctx, p, runs, base, o, exp, run, l)
	})
}

// runAll runs each cell with cell, parallel at a time, and returns the
// results of the cells it ran in grid order.
func runAll(ctx context.Context, cells []Planned, parallel int, opts runner.Options, log io.Writer, cell func(context.Context, Planned, runner.Options, io.Writer) CellResult) []CellResult {
	out := make([]CellResult, len(cells))
	ran := make([]bool, len(cells))
	lines := &lineWriter{w: log}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				o, l := opts, log
				if parallel > 1 {
					// Runs side by side print line by line, each of a
					// run's lines saying whose it is (the cell's own
					// lines start with its name already).
					l = lines.prefixed("")
					o.Out = lines.prefixed(cells[i].Cell.Name() + ": ")
				}
				out[i] = cell(ctx, cells[i], o, l)
				ran[i] = true
			}
		}()
	}
feed:
	for i := range cells {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	var done []CellResult
	for i, r := range out {
		if ran[i] {
			done = append(done, r)
		}
	}
	return done
}

// runCell runs one cell's runs, one after the other, and judges it.
func runCell(ctx context.Context, p Planned, runs int, base config.Config, opts runner.Options, exp *Expectations, run Runner, log io.Writer) CellResult {
	c := p.Cell
	cr := CellResult{Index: p.Index, Cell: c}
	cr.Expect, cr.Reason = exp.For(c)
	began := time.Now()
	first := SeedOf(base.Seed, c)
	// A cell measured invalid runs as often as its measurement says CI
	// must run it to miss the anomaly no more often than the flake rate.
	runs = max(runs, exp.CIRuns(c))
	opts.Cell = c.record(FlagsOf(c, base))
	for i := 0; i < runs && ctx.Err() == nil; i++ {
		cfg := c.config(base)
		cfg.Seed = first + int64(i)
		fmt.Fprintf(log, "%s run %d/%d (seed %d)\n", c.Name(), i+1, runs, cfg.Seed)
		rep, err := run(ctx, cfg, opts)
		cr.Runs = append(cr.Runs, result(cfg, rep, err))
		logRunError(log, c, err)
	}
	cr.Seconds = time.Since(began).Seconds()
	cr.judge()
	fmt.Fprintf(log, "%s: %s (expected %s)\n", c.Name(), cr.Outcome, cr.Expect)
	return cr
}

// SeedOf is the seed of a cell's first run; run i has SeedOf + i. It is
// a hash of the base seed and the cell's name, so adding cells to a grid,
// removing some, or dealing it into shards never changes a cell's seeds,
// and a later invocation can go on at a cell's next unused run. A
// mutant's control runs its variant's seeds: only the client may differ
// between them.
func SeedOf(base int64, c Cell) int64 {
	if c.Mutant != nil && c.Variant == config.Correct {
		c.Variant = c.Mutant.Variant
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", base, c.Name())
	// 2^62 leaves room above for any run number, and keeps seeds positive.
	return int64(h.Sum64() >> 2)
}

// lineWriter passes whole lines to w, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// prefixed is a writer that holds back a line until it ends, then writes
// it to w after prefix.
func (l *lineWriter) prefixed(prefix string) io.Writer {
	return &prefixWriter{to: l, prefix: prefix}
}

type prefixWriter struct {
	to      *lineWriter
	prefix  string
	pending []byte
}

// Write may be called from a run's goroutines at once.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.to.mu.Lock()
	defer p.to.mu.Unlock()
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			return len(b), nil
		}
		_, err := fmt.Fprintf(p.to.w, "%s%s", p.prefix, p.pending[:i+1])
		p.pending = p.pending[i+1:]
		if err != nil {
			return len(b), err
		}
	}
}

func result(cfg config.Config, rep *rundir.Results, err error) RunResult {
	r := RunResult{Seed: cfg.Seed, Verdict: checkers.Unknown}
	if err != nil {
		r.Error = err.Error()
	}
	if rep == nil {
		return r
	}
	r.Verdict, r.Dir, r.Evidence, r.Stopped = rep.Verdict, rep.Dir, rep.Evidence, rep.Stopped != nil
	if err != nil {
		// An interrupted or broken run judged its partial history: that
		// is no verdict on the cell.
		r.Verdict = checkers.Unknown
	}
	if n, ok := checkers.SectionsCompleted(rep.Checkers); ok && !r.Stopped {
		r.CyclesPerSec = float64(n) / cfg.TimeLimit.D().Seconds()
	}
	for _, c := range rep.Checkers {
		if c.Valid != checkers.Invalid {
			continue
		}
		r.Invalid = append(r.Invalid, c.Checker)
		for _, a := range c.Anomalies {
			t := float64(a.Time) / 1e9
			if r.FirstAnomaly == nil || t < *r.FirstAnomaly {
				r.FirstAnomaly = &t
			}
		}
	}
	return r
}

// judge decides the cell: an expected anomaly is met once any run finds it
// (a run that misses it proves nothing), an expected safe cell is
// contradicted by any invalid run.
//
// A cell whose runs were all valid but weak evidence (no fault reached a
// holder) is unexercised, whatever it expected: it neither meets nor
// contradicts anything.
func (cr *CellResult) judge() {
	if cr.Cell.Mutant != nil {
		cr.judgeMutant()
		return
	}
	var invalid, unknown, weak int
	for _, r := range cr.Runs {
		switch r.Verdict {
		case checkers.Invalid:
			invalid++
		case checkers.Valid:
			if r.Evidence == checkers.WeakEvidence {
				weak++
			}
		default:
			unknown++
		}
	}
	if len(cr.Runs) > 0 {
		cr.DetectionRate = float64(invalid) / float64(len(cr.Runs))
	}
	switch {
	case len(cr.Runs) == 0:
		cr.Outcome = Undecided
	case weak > 0 && weak == len(cr.Runs):
		cr.Outcome = Unexercised
	case cr.Expect == ExpectEither:
		cr.Outcome = Met
		if unknown == len(cr.Runs) {
			cr.Outcome = Undecided
		}
	case cr.Expect == ExpectInvalid && invalid > 0, cr.Expect == ExpectValid && invalid == 0 && unknown == 0:
		cr.Outcome = Met
	case cr.Expect == ExpectValid && invalid > 0, cr.Expect == ExpectInvalid && unknown == 0:
		cr.Outcome = Contradicted
	default:
		cr.Outcome = Undecided
	}
}

// Exit is the matrix's exit code: 1 when a cell contradicted its
// expectation, else 2 when one was undecided or unexercised, else 0.
func Exit(results []CellResult) int {
	code := 0
	for _, r := range results {
		switch r.Outcome {
		case Contradicted:
			return 1
		case Undecided, Unexercised:
			code = 2
		}
	}
	return code
}

// relDir is a run's directory relative to the matrix files, for links.
func relDir(base, dir string) string {
	if rel, err := filepath.Rel(base, dir); err == nil {
		return rel
	}
	return dir
}
