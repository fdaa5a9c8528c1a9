package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The kinds of change a comparison against a baseline reports.
const (
	// KindDetection: fewer runs found the anomaly the matrix expects of
	// the group, beyond what chance explains.
	KindDetection = "detection"
	// KindNewInvalid: an invalid run where the baseline had none in
	// NewInvalidMinRuns judged runs or more.
	KindNewInvalid = "new-invalid"
	// KindLatency: the p99 uncontended acquire grew by more than the
	// latency factor on one host class.
	KindLatency = "latency"
)

// Kinds are the kinds of change, in the order a comparison lists them.
var Kinds = []string{KindDetection, KindNewInvalid, KindLatency}

const (
	// NewInvalidMinRuns is how many judged runs without an invalid one
	// make an invalid run now news: in fewer, an anomaly the group finds
	// now and then may simply not have come up yet.
	NewInvalidMinRuns = 10
	// MinLatencySamples is how many uncontended acquires each side needs
	// for its p99 to mean something: with fewer, the 99th percentile is
	// one or two samples, which one slow scheduling decides.
	MinLatencySamples = 200
	// DefaultLatencyFactor is how much worse a p99 must be to count.
	DefaultLatencyFactor = 1.5
)

// ExpectKeys are the keys a run's expectation depends on: the fields a
// matrix cell is made of, its sweep axes among them as far as the runs
// table has a column for them.
var ExpectKeys = []string{"backend", "workload", "nemesis", "fence", "store", "variant", "ttl", "concurrency", "rtt", "work"}

// Expect is what the matrix expects of the runs whose ExpectKeys have
// these values: "valid", "invalid" or "either". Runs record no
// expectation, so the caller derives it from the matrix's rules.
type Expect func(cell map[string]string) string

// BaselineOptions tune a comparison against a baseline.
type BaselineOptions struct {
	// LatencyFactor is how many times the baseline's p99 the current p99
	// must exceed; DefaultLatencyFactor when 0.
	LatencyFactor float64
	// Expect decides which groups can lose detection; with none, no
	// group does.
	Expect Expect
}

// Side is one side of a change: the group's runs in the baseline or now.
// A latency change's sides are the group's runs on one host class.
type Side struct {
	Runs               int        `json:"runs"`
	Invalid            int        `json:"invalid"`
	Unknown            int        `json:"unknown"`
	InvalidInterval    [2]float64 `json:"invalid_interval"`
	Host               *string    `json:"host,omitempty"`
	AcquireUncontended *Quantiles `json:"acquire_uncontended_ms,omitempty"`
}

// Change is a group that changed against the baseline, in one way.
type Change struct {
	Key      map[string]string `json:"key"`
	Kind     string            `json:"kind"`
	Baseline Side              `json:"baseline"`
	Now      Side              `json:"now"`
	Message  string            `json:"message"`
}

// Incomparable is a group in both comparisons whose latencies could not
// be compared, and why; it is no change.
type Incomparable struct {
	Key    map[string]string `json:"key"`
	Reason string            `json:"reason"`
}

// Diff is what changed between a baseline and now.
type Diff struct {
	Changes      []Change
	Incomparable []Incomparable
}

// AgainstBaseline compares the groups q selects in now with the groups
// baseQ selects in base (another catalog, or the same one with
// baseQ.Revision set); both group by the same keys. Groups found on one
// side only are no change.
func AgainstBaseline(now *Catalog, q Query, base *Catalog, baseQ Query, opts BaselineOptions) (Diff, error) {
	by := q.By
	if len(by) == 0 {
		by = DefaultBy
	}
	q.By, baseQ.By = by, by
	factor := cmp.Or(opts.LatencyFactor, DefaultLatencyFactor)
	var d Diff
	nowG, err := now.Compare(q)
	if err != nil {
		return d, err
	}
	baseG, err := base.Compare(baseQ)
	if err != nil {
		return d, fmt.Errorf("baseline: %w", err)
	}
	expectInvalid, err := invalidExpected(now, q, base, baseQ, by, opts.Expect)
	if err != nil {
		return d, err
	}
	baseBy := indexGroups(baseG, by)
	for _, g := range nowG {
		b, ok := baseBy[groupID(g.Key, by)]
		if !ok {
			continue
		}
		if c, ok := detection(b, g, expectInvalid[groupID(g.Key, by)]); ok {
			d.Changes = append(d.Changes, c)
		}
		if c, ok := newInvalid(b, g); ok {
			d.Changes = append(d.Changes, c)
		}
	}
	lat, inc, err := latency(now, q, base, baseQ, by, factor)
	if err != nil {
		return d, err
	}
	d.Changes = append(d.Changes, lat...)
	d.Incomparable = inc
	slices.SortStableFunc(d.Changes, func(a, b Change) int {
		return cmp.Or(cmp.Compare(groupID(a.Key, by), groupID(b.Key, by)),
			cmp.Compare(slices.Index(Kinds, a.Kind), slices.Index(Kinds, b.Kind)))
	})
	return d, nil
}

func detection(b, g Group, expectInvalid bool) (Change, bool) {
	bRate, nRate := rate(b), rate(g)
	// Non-overlapping intervals are a fall chance does not explain at 95 %;
	// a group that expects valid or either has no detection to lose.
	if !expectInvalid || bRate < 0 || nRate < 0 || nRate >= bRate || g.InvalidInterval[1] >= b.InvalidInterval[0] {
		return Change{}, false
	}
	return Change{Key: g.Key, Kind: KindDetection, Baseline: sideOf(b), Now: sideOf(g),
		Message: fmt.Sprintf("the invalid rate fell from %s to %s where the matrix expects invalid: the 95 %% intervals do not overlap",
			invalidText(b), invalidText(g))}, true
}

func newInvalid(b, g Group) (Change, bool) {
	judged := b.Runs - b.Unknown
	if g.Invalid == 0 || b.Invalid > 0 || judged < NewInvalidMinRuns {
		return Change{}, false
	}
	return Change{Key: g.Key, Kind: KindNewInvalid, Baseline: sideOf(b), Now: sideOf(g),
		Message: fmt.Sprintf("%d of %d runs invalid; the baseline had none in %d judged runs", g.Invalid, g.Runs-g.Unknown, judged)}, true
}

// latency compares each group's p99 uncontended acquire host class by
// host class: a host's cores, engine and storage bound a service's
// latency, so only runs of one class compare.
func latency(now *Catalog, q Query, base *Catalog, baseQ Query, by []string, factor float64) ([]Change, []Incomparable, error) {
	withHost := append(slices.Clone(by), HostKey)
	if slices.Contains(by, HostKey) {
		withHost = by
	}
	q.By, baseQ.By = withHost, withHost
	nowG, err := now.Compare(q)
	if err != nil {
		return nil, nil, err
	}
	baseG, err := base.Compare(baseQ)
	if err != nil {
		return nil, nil, fmt.Errorf("baseline: %w", err)
	}
	type hosts struct {
		key       map[string]string
		now, base map[string]Group
	}
	groups := map[string]*hosts{}
	var order []string
	for i, side := range [][]Group{baseG, nowG} {
		for _, g := range side {
			id := groupID(g.Key, by)
			h := groups[id]
			if h == nil {
				h = &hosts{key: project(g.Key, by), now: map[string]Group{}, base: map[string]Group{}}
				groups[id] = h
				order = append(order, id)
			}
			if i == 0 {
				h.base[g.Key[HostKey]] = g
			} else {
				h.now[g.Key[HostKey]] = g
			}
		}
	}
	slices.Sort(order)
	var changes []Change
	var inc []Incomparable
	for _, id := range order {
		h := groups[id]
		if len(h.base) == 0 || len(h.now) == 0 {
			continue
		}
		var compared int
		var why []string
		for _, host := range slices.Sorted(maps.Keys(h.now)) {
			n := h.now[host]
			b, ok := h.base[host]
			switch {
			case host == "":
				why = append(why, fmt.Sprintf("%d runs now have no host class", n.Runs))
				continue
			case !ok:
				why = append(why, fmt.Sprintf("no baseline run on %s", host))
				continue
			case b.AcquireUncontended.N < MinLatencySamples || n.AcquireUncontended.N < MinLatencySamples ||
				b.AcquireUncontended.P99 == nil || n.AcquireUncontended.P99 == nil:
				why = append(why, fmt.Sprintf("on %s, %d uncontended acquires in the baseline and %d now (%d needed on each side)",
					host, b.AcquireUncontended.N, n.AcquireUncontended.N, MinLatencySamples))
				continue
			}
			compared++
			bp, np := *b.AcquireUncontended.P99, *n.AcquireUncontended.P99
			if np <= factor*bp {
				continue
			}
			bs, ns := sideOf(b), sideOf(n)
			bs.Host, ns.Host = &host, &host
			bq, nq := b.AcquireUncontended, n.AcquireUncontended
			bs.AcquireUncontended, ns.AcquireUncontended = &bq, &nq
			changes = append(changes, Change{Key: h.key, Kind: KindLatency, Baseline: bs, Now: ns,
				Message: fmt.Sprintf("p99 uncontended acquire %s ms against %s ms (more than %g times) on %s",
					ms(np), ms(bp), factor, host)})
		}
		if compared == 0 {
			if len(why) == 0 {
				why = append(why, "no host class in common")
			}
			inc = append(inc, Incomparable{Key: h.key, Reason: "latency not comparable: " + strings.Join(why, "; ")})
		}
	}
	return changes, inc, nil
}

// invalidExpected is, for each group, whether the matrix expects every
// one of its runs invalid: a group that mixes cells (grouped by fewer keys
// than a cell has) can only lose detection if each of its cells can.
func invalidExpected(now *Catalog, q Query, base *Catalog, baseQ Query, by []string, expect Expect) (map[string]bool, error) {
	out := map[string]bool{}
	if expect == nil {
		return out, nil
	}
	fine := slices.Clone(by)
	for _, k := range ExpectKeys {
		if !slices.Contains(fine, k) {
			fine = append(fine, k)
		}
	}
	q.By, baseQ.By = fine, fine
	for i, side := range []struct {
		c *Catalog
		q Query
	}{{now, q}, {base, baseQ}} {
		gs, err := side.c.Compare(side.q)
		if err != nil {
			if i == 1 {
				err = fmt.Errorf("baseline: %w", err)
			}
			return nil, err
		}
		for _, g := range gs {
			id := groupID(g.Key, by)
			all, seen := out[id]
			out[id] = (all || !seen) && expect(project(g.Key, ExpectKeys)) == "invalid"
		}
	}
	return out, nil
}

func indexGroups(gs []Group, by []string) map[string]Group {
	m := make(map[string]Group, len(gs))
	for _, g := range gs {
		m[groupID(g.Key, by)] = g
	}
	return m
}

func groupID(key map[string]string, by []string) string {
	vals := make([]string, len(by))
	for i, k := range by {
		vals[i] = key[k]
	}
	return strings.Join(vals, "\x00")
}

func project(key map[string]string, keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = key[k]
	}
	return out
}

// rate is the group's invalid rate over its judged runs; −1 with none.
func rate(g Group) float64 {
	if g.Runs-g.Unknown == 0 {
		return -1
	}
	return float64(g.Invalid) / float64(g.Runs-g.Unknown)
}

func sideOf(g Group) Side {
	return Side{Runs: g.Runs, Invalid: g.Invalid, Unknown: g.Unknown, InvalidInterval: g.InvalidInterval}
}

func invalidText(g Group) string {
	return fmt.Sprintf("%d/%d [%.2f, %.2f]", g.Invalid, g.Runs-g.Unknown, g.InvalidInterval[0], g.InvalidInterval[1])
}

func ms(v float64) string { return fmt.Sprintf("%.3g", v) }

// revisionFilter selects, in Compare's choice of each run's judgment, the
// judgments by revision rev: judgments record lockbench's version and VCS
// revision ("v1.2.0 revision 3f2a…"), and people name a revision by the
// whole string, by its hash or by a prefix of the hash.
func revisionFilter(rev string) string {
	if rev == "" {
		return ""
	}
	return `AND (k.revision = ? OR k.revision LIKE ? ESCAPE '\')`
}

func revisionArgs(rev string) []any {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(rev)
	return []any{rev, "% revision " + esc + "%"}
}
