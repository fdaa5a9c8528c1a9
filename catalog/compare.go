package catalog

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
)

// Keys are what runs can be selected and grouped by: test.json's
// configuration names, each a column of the runs table. nemesis is the
// list joined with "+", as matrix cells name it; an absent rtt is 0s.
var Keys = []string{"backend", "nemesis", "fence", "store", "workload", "variant", "ttl", "concurrency", "rtt", "work", "pause_target"}

// DefaultBy is the grouping compare uses unless told otherwise.
var DefaultBy = []string{"backend", "nemesis", "fence"}

// Query selects runs: each Where key must equal its value, and the run's
// latest judgment must be no older than Since.
type Query struct {
	Where map[string]string
	Since time.Time
	By    []string
	// Revision, when set, takes each run's judgment by that revision of
	// lockbench (see revisionFilter) instead of its latest.
	Revision string
}

// HostKey groups runs by their host class, which only latencies need:
// it is a column of the runs table, not a test.json name, so it is not
// one of Keys.
const HostKey = "host"

// Quantiles are a histogram's percentiles, in ms; nil where it is empty.
type Quantiles struct {
	P50  *float64 `json:"p50"`
	P99  *float64 `json:"p99"`
	P999 *float64 `json:"p999"`
	N    int64    `json:"n"`
}

// Group is one row of a comparison: the runs that share the --by values.
type Group struct {
	Key map[string]string `json:"key"`
	// Runs are the runs in the group, Invalid those judged invalid,
	// Unknown those judged neither way (or discarded: stopped at their
	// first anomaly, then not judged invalid); InvalidInterval is the
	// Wilson 95 % interval of Invalid over the judged runs (Runs − Unknown).
	// The measures below leave out runs stopped at their first anomaly,
	// Faults (the unavailability samples) with them.
	Runs            int        `json:"runs"`
	Invalid         int        `json:"invalid"`
	Unknown         int        `json:"unknown"`
	InvalidInterval [2]float64 `json:"invalid_interval"`
	// Anomalies counts the runs that found each kind.
	Anomalies          map[string]int `json:"anomalies"`
	AcquireWait        Quantiles      `json:"acquire_wait_ms"`
	AcquireUncontended Quantiles      `json:"acquire_uncontended_ms"`
	Handover           Quantiles      `json:"handover_ms"`
	RenewRTT           Quantiles      `json:"renew_rtt_ms"`
	Unavailable        Quantiles      `json:"unavailable_ms"`
	Faults             int64          `json:"faults"`
	CyclesPerSec       float64        `json:"cycles_per_s"`
	RenewFailures      int64          `json:"renew_failures"`
	FenceRejects       int64          `json:"fence_rejects"`
	// CASRetriesPerSuccess is writes refused per write taken: the retries
	// of CAS on a version (a locked write is refused only by a fence).
	CASRetriesPerSuccess *float64 `json:"cas_retries_per_success"`
	// FirstAnomalyS is the median, over invalid runs, of the time from
	// the first fault to the first anomaly.
	FirstAnomalyS *float64 `json:"first_anomaly_s"`
	FirstAnomalyN int      `json:"first_anomaly_n"`
	RunsAt        []string `json:"runs_at"`

	hists   [5]metrics.Histogram
	cycles  []float64
	first   []float64
	retries [2]int64
}

// anomalyKinds are the kinds a comparison counts, by the name its JSON
// gives them.
var anomalyKinds = []struct {
	name string
	kind checkers.AnomalyKind
}{
	{"stale_write", checkers.StaleWriteAccepted},
	{"two_holders", checkers.TwoHoldersKind},
	{"lost_acknowledged", checkers.LostUpdate},
	{"deadlock", checkers.Deadlock},
}

// Compare groups the runs q selects, each by its latest judgment (by the
// time it was checked, then by revision).
func (c *Catalog) Compare(q Query) ([]Group, error) {
	by := q.By
	if len(by) == 0 {
		by = DefaultBy
	}
	for _, k := range append(slices.Clone(by), mapKeys(q.Where)...) {
		if !slices.Contains(Keys, k) && k != HostKey {
			return nil, fmt.Errorf("unknown key %q: the keys are %s", k, strings.Join(Keys, ", "))
		}
	}
	cols := strings.Join(by, ", r.")
	sqlq := `SELECT r.` + cols + `, r.dir, j.verdict, j.checkers, j.metrics FROM runs r JOIN judgments j USING (run_id, start, seed)
		WHERE j.revision = (SELECT k.revision FROM judgments k WHERE k.run_id = r.run_id AND k.start = r.start AND k.seed = r.seed
			` + revisionFilter(q.Revision) + ` ORDER BY k.checked DESC, k.revision DESC LIMIT 1)`
	var args []any
	if q.Revision != "" {
		args = append(args, revisionArgs(q.Revision)...)
	}
	for _, k := range mapKeys(q.Where) {
		args = append(args, q.Where[k])
		sqlq += ` AND CAST(r.` + k + ` AS TEXT) = $` + strconv.Itoa(len(args))
	}
	if !q.Since.IsZero() {
		args = append(args, q.Since.UTC().Format(time.RFC3339Nano))
		sqlq += ` AND j.checked >= $` + strconv.Itoa(len(args))
	}
	rows, err := c.db.Query(sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	defer rows.Close()
	type row struct {
		vals                 []string
		dir, verdict, cs, ms string
		sums                 []summary
		m                    metrics.Run
		err                  error
	}
	var all []row
	for rows.Next() {
		r := row{vals: make([]string, len(by))}
		dest := []any{}
		for i := range r.vals {
			dest = append(dest, &r.vals[i])
		}
		if err := rows.Scan(append(dest, &r.dir, &r.verdict, &r.cs, &r.ms)...); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.path, err)
		}
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	// Decoding the runs' summaries and histograms is most of a
	// comparison's time: it is shared among the cores, and the groups are
	// then filled in catalog order, as one core would.
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(all); i += workers {
				r := &all[i]
				if err := json.Unmarshal([]byte(r.cs), &r.sums); err != nil {
					r.err = err
				} else if err := json.Unmarshal([]byte(r.ms), &r.m); err != nil {
					r.err = err
				}
				r.cs, r.ms = "", ""
			}
		})
	}
	wg.Wait()
	groups := map[string]*Group{}
	for i := range all {
		r := &all[i]
		if r.err != nil {
			return nil, fmt.Errorf("catalog %s: run %s: %w", c.path, r.dir, r.err)
		}
		id := strings.Join(r.vals, "\x00")
		g := groups[id]
		if g == nil {
			g = &Group{Key: map[string]string{}, Anomalies: map[string]int{}}
			for i, k := range by {
				g.Key[k] = r.vals[i]
			}
			for _, a := range anomalyKinds {
				g.Anomalies[a.name] = 0
			}
			groups[id] = g
		}
		g.add(checkers.Verdict(r.verdict), r.sums, r.m, r.dir)
	}
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		g.finish()
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		for _, k := range by {
			if c := cmp.Compare(a.Key[k], b.Key[k]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out, nil
}

// add counts a run into the group. A run stopped at its first anomaly
// counts for detection (its verdict, its anomalies) but not for the
// measures, cut short where it went wrong; stopped and not judged invalid,
// it stands for no verdict and counts as unknown.
func (g *Group) add(v checkers.Verdict, sums []summary, m metrics.Run, dir string) {
	g.Runs++
	if rundir.Discarded(m.Stopped, v) {
		v = checkers.Unknown
	}
	switch v {
	case checkers.Invalid:
		g.Invalid++
		if m.FirstAnomaly != nil {
			g.first = append(g.first, *m.FirstAnomaly)
		}
	case checkers.Valid:
	default:
		g.Unknown++
	}
	for _, a := range anomalyKinds {
		if slices.ContainsFunc(sums, func(s summary) bool { return s.Anomalies[a.kind.Name] > 0 }) {
			g.Anomalies[a.name]++
		}
	}
	g.RunsAt = append(g.RunsAt, dir)
	if m.Stopped {
		return
	}
	for i, h := range []metrics.Histogram{m.AcquireWait, m.AcquireUncontended, m.Handover, m.RenewRTT, m.Unavailable} {
		g.hists[i].Merge(h)
	}
	g.cycles = append(g.cycles, m.CyclesPerSec())
	g.RenewFailures += m.RenewFailures
	g.FenceRejects += m.FenceRejects
	g.retries[0] += m.WritesFailed
	g.retries[1] += m.WritesOK
}

func (g *Group) finish() {
	lo, hi := Wilson(g.Invalid, g.Runs-g.Unknown)
	g.InvalidInterval = [2]float64{lo, hi}
	for i, q := range []*Quantiles{&g.AcquireWait, &g.AcquireUncontended, &g.Handover, &g.RenewRTT, &g.Unavailable} {
		*q = quantiles(g.hists[i])
	}
	g.Unavailable.P999 = nil
	g.Faults = g.hists[4].N
	g.CyclesPerSec = median(g.cycles)
	if g.retries[1] > 0 {
		r := float64(g.retries[0]) / float64(g.retries[1])
		g.CASRetriesPerSuccess = &r
	}
	if len(g.first) > 0 {
		m := median(g.first)
		g.FirstAnomalyS, g.FirstAnomalyN = &m, len(g.first)
	}
	slices.Sort(g.RunsAt)
}

func quantiles(h metrics.Histogram) Quantiles {
	q := Quantiles{N: h.N}
	for _, p := range []struct {
		q   float64
		dst **float64
	}{{0.5, &q.P50}, {0.99, &q.P99}, {0.999, &q.P999}} {
		if v, ok := h.Quantile(p.q); ok {
			*p.dst = &v
		}
	}
	return q
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Wilson is the Wilson score 95 % interval of k successes in n trials;
// [0, 1] when n is 0.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return max(0, center-half), min(1, center+half)
}

func mapKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
