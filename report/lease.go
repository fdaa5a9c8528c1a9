package report

import (
	"cmp"
	"errors"
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
)

// Colours of the exclusion checker's windows on the timelines.
const (
	colTwoHolders  = "#dc2626"
	colStaleBelief = "#f59e0b"
)

// exclusion is the exclusion checker's result, or nil when the run has none.
func (an *analysis) exclusion() *checkers.Result {
	for i := range an.in.Results {
		if r := &an.in.Results[i]; r.Checker == (checkers.Exclusion{}).Name() {
			return r
		}
	}
	return nil
}

// drawWindows shades the exclusion checker's windows on the lanes of the
// clients they concern: red where two clients both certainly held the lock,
// amber where a holder believed it held the lock past its lease.
// windowColor is how a window of kind k is drawn: a broken promise in
// red, a belief in amber.
func windowColor(k checkers.WindowKind) string {
	if k.Violation {
		return colTwoHolders
	}
	return colStaleBelief
}

func (an *analysis) drawWindows(b *svgBuilder, tl timeline, x func(int64) float64) {
	r := an.exclusion()
	if r == nil {
		return
	}
	for _, w := range r.Windows {
		if w.To < tl.from || w.From > tl.to {
			continue
		}
		x0, x1 := x(w.From), x(w.To)
		k := w.KindOf()
		color, label, lanes := windowColor(k), "stale", w.Clients[:1]
		if k.Violation {
			label, lanes = "two holders", w.Clients
		}
		b.f(`<g class="%s-window"><title>%s</title>`, w.Kind, html.EscapeString(w.Message))
		for i, name := range an.clients {
			if !slices.Contains(lanes, name) {
				continue
			}
			y := tlTop + laneH*i
			b.f(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.22" stroke="%s" stroke-width="1"/>`,
				x0, y, max(x1-x0, 1.5), laneH, color, color)
			if x1-x0 >= float64(len(label))*6 {
				b.f(`<text x="%.1f" y="%d" font-size="10" font-weight="700" fill="%s">%s</text>`, x0+2, y+laneH-3, color, label)
			}
		}
		b.WriteString(`</g>`)
	}
}

// leaseView is the page's lease section: telemetry, sizing advice, what
// each fault did, and the windows.
type leaseView struct {
	Stats    []keyValue
	Advice   []string
	Faults   []faultRow
	Windows  []windowRow
	Evidence string
	Plots    []template.HTML
	Note     string
}

type faultRow struct {
	Fault, Start, End, Healthy, Hit, Unavailable string
	Windows, Writes, TwoHolders                  int64
}

type windowRow struct{ Kind, From, To, Message string }

// telemetry is what the history says of the leases.
type telemetry struct {
	renewOK, renewFail, renewUnknown int
	renewLatency                     []float64 // ms, sorted
	margins                          []float64 // ms, sorted: lease left when a renewal was sent
	holds, waits, trips              []float64 // ms, sorted
	// series for the plots: x in s, y in ms.
	renewXY, marginXY, waitXY, tripXY plotter.XYs
}

// measure derives the lease telemetry. The margin at a renewal is how much
// of the lease was left when it was sent: the newest grant or acknowledged
// renewal's send time + TTL, less the renewal's send time. The acquire's
// latency is split at the granting attempt's send time into the wait for
// the lock and the service's round trip; where the lease is a session's
// (etcd) the recorded time is the session lease's proof, not the lock
// request, so there is no split.
func (an *analysis) measure() telemetry {
	var t telemetry
	proof := map[string]int64{} // client -> lease proven until (send + TTL)
	split := !an.in.Lease.Session
	// An acquire that measures a wait is a hold on a lane: a long run's
	// series, hundreds of thousands of points, are sized up front rather
	// than grown.
	holds := 0
	for _, l := range an.lanes {
		holds += len(l.holds)
	}
	t.holds = make([]float64, 0, holds)
	if split {
		t.waits, t.trips = make([]float64, 0, holds), make([]float64, 0, holds)
		t.waitXY, t.tripXY = make(plotter.XYs, 0, holds), make(plotter.XYs, 0, holds)
	}
	for _, r := range an.refs {
		// Only renewals and acquires measure: the completions of the
		// others, each a cache miss in a long history, are not read.
		if f := an.in.History[r.Call].F; f != history.Renew && f != history.Acquire {
			continue
		}
		o := r.Op(an.in.History)
		if o.Lone || !o.Done {
			continue
		}
		if owner, ok := history.LeaseOwner(o.Process); ok && o.F == history.Renew {
			switch o.Type {
			case history.OK:
				t.renewOK++
				if p, ok := proof[owner]; ok {
					m := float64(p-o.Call.Time) / 1e6
					t.margins = append(t.margins, m)
					t.marginXY = append(t.marginXY, plotter.XY{X: float64(o.Call.Time) / 1e9, Y: m})
				}
				proof[owner] = o.Call.Time + o.Ret.TTL
			case history.Fail:
				t.renewFail++
			default:
				t.renewUnknown++
			}
			ms := float64(o.Ret.Time-o.Call.Time) / 1e6
			t.renewLatency = append(t.renewLatency, ms)
			t.renewXY = append(t.renewXY, plotter.XY{X: float64(o.Call.Time) / 1e9, Y: math.Max(ms, 0.001)})
			continue
		}
		if o.F != history.Acquire || o.Type != history.OK || o.Ret.Attempt == 0 {
			continue
		}
		proof[o.Process] = o.Ret.Attempt + o.Ret.TTL
		if split {
			wait, trip := float64(o.Ret.Attempt-o.Call.Time)/1e6, float64(o.Ret.Time-o.Ret.Attempt)/1e6
			t.waits, t.trips = append(t.waits, wait), append(t.trips, trip)
			x := float64(o.Call.Time) / 1e9
			t.waitXY = append(t.waitXY, plotter.XY{X: x, Y: math.Max(wait, 0.001)})
			t.tripXY = append(t.tripXY, plotter.XY{X: x, Y: math.Max(trip, 0.001)})
		}
	}
	// A hold that outlived its lease measures the fault, not the
	// workload: it is left out of the hold times the TTL is sized by.
	var stale []checkers.Window
	if r := an.exclusion(); r != nil {
		for _, w := range r.Windows {
			if !w.KindOf().Violation {
				stale = append(stale, w)
			}
		}
	}
	for _, name := range an.clients {
		for _, h := range an.lanes[name].holds {
			if !slices.ContainsFunc(stale, func(w checkers.Window) bool {
				return w.Clients[0] == name && w.From >= h.start && w.From <= h.end
			}) {
				t.holds = append(t.holds, float64(h.end-h.start)/1e6)
			}
		}
	}
	for _, s := range [][]float64{t.renewLatency, t.margins, t.holds, t.waits, t.trips} {
		slices.Sort(s)
	}
	return t
}

// minRank is the smallest q whose nearest-rank quantile is the minimum of
// any sample (q = 0 has no rank).
const minRank = 1e-9

// pct formats the nearest-rank quantile q of sorted ms values.
func pct(sorted []float64, q float64) string {
	if len(sorted) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f ms", quantile(sorted, q))
}

func (an *analysis) leaseView() (leaseView, error) {
	var v leaseView
	r := an.exclusion()
	if r == nil {
		v.Note = "This run has no exclusion verdict: nothing is known of its leases."
		return v, nil
	}
	if r.Valid == checkers.Skipped {
		v.Note = "No lease: " + r.Reason + "."
		return v, nil
	}
	t := an.measure()
	v.Stats = []keyValue{
		{"renewals", fmt.Sprintf("%d ok, %d failed (certainly not renewed), %d unknown", t.renewOK, t.renewFail, t.renewUnknown)},
		{"renewal round trip", fmt.Sprintf("p50 %s, p99 %s", pct(t.renewLatency, 0.5), pct(t.renewLatency, 0.99))},
		{"lease left at a renewal", fmt.Sprintf("min %s, p50 %s", pct(t.margins, minRank), pct(t.margins, 0.5))},
		{"hold time (holds past their lease left out)", fmt.Sprintf("p50 %s, p99 %s, max %s", pct(t.holds, 0.5), pct(t.holds, 0.99), pct(t.holds, 1))},
	}
	if len(t.waits) > 0 {
		v.Stats = append(v.Stats,
			keyValue{"lock wait (acquire invoked → granting attempt sent)", fmt.Sprintf("p50 %s, p99 %s", pct(t.waits, 0.5), pct(t.waits, 0.99))},
			keyValue{"service round trip (granting attempt → grant seen)", fmt.Sprintf("p50 %s, p99 %s", pct(t.trips, 0.5), pct(t.trips, 0.99))})
	}
	v.Advice = an.ttlAdvice(t)
	v.Evidence = checkers.Evidence(an.in.Verdict, an.in.Results)
	for _, f := range r.Faults {
		hit := "no"
		if f.HitHolder {
			hit = "yes"
		}
		switch {
		case f.HeldThrough && f.HeldFrom <= f.Start:
			hit = "yes, and it kept the lock from everyone for the whole fault"
		case f.HeldThrough:
			hit = fmt.Sprintf("yes: it froze its target just after a release, and the lock, granted to it while frozen, was kept from everyone from %s until the heal", history.Seconds(f.HeldFrom))
		}
		v.Faults = append(v.Faults, faultRow{Fault: f.Fault + " " + joinAnd(f.Targets), Start: history.Seconds(f.Start),
			End: history.Seconds(f.End), Healthy: recoveredIn(f), Hit: hit, Unavailable: an.unavailable(f.Start),
			Windows: f.StaleWindows, Writes: f.StaleWrites, TwoHolders: f.TwoHolders})
	}
	for _, w := range r.Windows {
		v.Windows = append(v.Windows, windowRow{Kind: w.Kind, From: history.Seconds(w.From), To: history.Seconds(w.To), Message: w.Message})
	}
	var err error
	v.Plots, err = an.leasePlots(t)
	return v, err
}

// ttlAdvice sizes the TTL against what the run measured: a holding must
// fit in a TTL with the renewal's round trip to spare, and the clients
// renew every third of the TTL, so a holder frozen just before a renewal
// has two thirds of it left.
func (an *analysis) ttlAdvice(t telemetry) []string {
	ttl := an.test.Config.TTL.D()
	if ttl <= 0 {
		return []string{"The TTL is not known (test.json), so no sizing advice."}
	}
	if an.in.Lease.LastStatement {
		// A lock with no TTL has nothing to size: the TTL only sets the
		// server's detection of a dead peer.
		return []string{fmt.Sprintf("This lock has no TTL: it is held as long as its session, which the server ends "+
			"about %s after a client stops answering (TCP keepalives, tcp_user_timeout), or after an idle timeout; "+
			"a pause longer than that idle timeout, or a section longer than that detection after a partition, opens a stale window.", ttl)}
	}
	ttlMs := float64(ttl) / 1e6
	var out []string
	if len(t.holds) > 0 {
		hold := quantile(t.holds, 0.99)
		rtt := 0.0
		if len(t.renewLatency) > 0 {
			rtt = quantile(t.renewLatency, 0.99)
		}
		need := hold + rtt
		verdict := fmt.Sprintf("fits with %.0f ms to spare", ttlMs-need)
		if need > ttlMs {
			verdict = "does not fit: holds depend on renewals arriving in time"
		}
		out = append(out, fmt.Sprintf("Hold time p99 %.1f ms + renewal round trip p99 %.1f ms = %.1f ms against a TTL of %s: %s.",
			hold, rtt, need, ttl, verdict))
	}
	absorb := ttlMs*2/3 - pctValue(t.renewLatency, 0.99)
	out = append(out, fmt.Sprintf("Renewals run every TTL/3, so the TTL absorbs a pause of at most %.0f ms "+
		"(two thirds of %s less the renewal round trip p99); a longer pause of a holder opens a stale window.", absorb, ttl))
	if len(t.margins) > 0 {
		out = append(out, fmt.Sprintf("The smallest lease left when a renewal was sent was %.1f ms.", t.margins[0]))
	}
	return out
}

func pctValue(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return quantile(sorted, q)
}

// unavailable is how long after t no critical section completed: the
// time the workload made no progress after a fault started.
func (an *analysis) unavailable(t int64) string {
	next := int64(-1)
	var who string
	for o := range an.ops() {
		if o.F == history.Write && o.Type == history.OK && o.Ret.Time >= t && (next < 0 || o.Ret.Time < next) {
			next, who = o.Ret.Time, o.Process
		}
	}
	if next < 0 {
		return fmt.Sprintf("no write completed in the %s left", seconds(an.end-t))
	}
	return fmt.Sprintf("%s (until %s's write at %s)", seconds(next-t), who, history.Seconds(next))
}

// recoveredIn is how long the service took to answer again after f's
// heal, for the table of faults.
func recoveredIn(f checkers.FaultEffect) string {
	switch {
	case f.Unhealthy != "":
		return "not healthy again: " + f.Unhealthy
	case f.Healthy > 0:
		return seconds(f.Healthy)
	}
	return "not awaited"
}

// leasePlots draws the acquire's latency split into the wait and the
// round trip, the renewals' round trips, and the lease left at each
// renewal, with the fault windows shaded.
func (an *analysis) leasePlots(t telemetry) ([]template.HTML, error) {
	type series struct {
		xys   plotter.XYs
		color string
	}
	charts := []struct {
		title string
		log   bool
		ss    []series
	}{
		{"acquire: lock wait (grey) and service round trip (blue)", true, []series{{t.waitXY, colRead}, {t.tripXY, colHoldEdge}}},
		{"renewal round trip", true, []series{{t.renewXY, colFault}}},
		{"lease left when a renewal was sent", false, []series{{t.marginXY, colAccepted}}},
	}
	// The charts of a long run hold a point per acquire and per renewal,
	// hundreds of thousands: they are drawn side by side, on every core.
	out := make([]template.HTML, len(charts))
	errs := make([]error, len(charts))
	var wg sync.WaitGroup
	for k, c := range charts {
		// A panic while drawing one chart becomes its error here: in a
		// goroutine of its own it would end the process, past the
		// recovery that keeps a failed page from costing the verdict.
		wg.Go(func() {
			errs[k] = recovered(c.title, func() error {
				p := an.newPlot(c.title, "ms")
				n := 0
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, s := range c.ss {
					n += len(s.xys)
					for _, xy := range s.xys {
						lo, hi = min(lo, xy.Y), max(hi, xy.Y)
					}
				}
				if n == 0 {
					p.Title.Text += ": none recorded"
				}
				if c.log && n > 0 {
					// An explicit range: left to itself, the plot widens a
					// range of one value (one renewal, or every value
					// equal) by ±1, below zero, where a log scale panics.
					p.Y.Scale = plot.LogScale{}
					p.Y.Tick.Marker = plot.TickerFunc(logTicks)
					p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
				}
				var ds []*dots
				for _, s := range c.ss {
					if len(s.xys) == 0 {
						continue
					}
					d, err := newDots(s.xys, rgb(s.color), vg.Points(1.6))
					if err != nil {
						return err
					}
					p.Add(d)
					ds = append(ds, d)
				}
				svg, err := renderSVG(p, 6.4*vg.Inch, 2.6*vg.Inch, ds...)
				if err != nil {
					return err
				}
				out[k] = svg
				return nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// windowSteps tells the stale windows of an incident's holding in its
// story.
func (an *analysis) windowSteps(client string, token, from, to int64) []step {
	r := an.exclusion()
	if r == nil {
		return nil
	}
	var out []step
	for _, w := range r.Windows {
		if w.Clients[0] == client && (token == 0 || len(w.Tokens) == 0 || w.Tokens[0] == token) && w.To >= from && w.From <= to {
			out = append(out, step{T: w.From, Text: w.Message})
		}
	}
	slices.SortFunc(out, func(a, b step) int { return cmp.Compare(a.T, b.T) })
	return out
}
