package metrics

import (
	"math"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
)

// Run is what one run measured, from its history and its checkers'
// results.
type Run struct {
	// AcquireWait is acquire invoke → ok, waiting behind other holders
	// included; an acquire that failed or got no answer counts at its
	// duration, censored.
	AcquireWait Histogram `json:"acquire_wait_ms"`
	// AcquireUncontended is acquire invoke → ok for the acquires during
	// which no other client held the lock (until its release completed)
	// or asked for it: the service's own cost.
	AcquireUncontended Histogram `json:"acquire_uncontended_ms"`
	// Handover is from a holder's release completion to the next grant,
	// to a client that was already waiting.
	Handover Histogram `json:"handover_ms"`
	// RenewRTT is renew invoke → ok. (On etcd and ZooKeeper an acquire's
	// attempt is a keep-alive's time, not a request's, so no round trip
	// is read from attempts.)
	RenewRTT Histogram `json:"renew_rtt_ms"`
	// Unavailable has one sample per fault: the progress checker's
	// unavailability after it (checkers.FaultUnavailability).
	Unavailable Histogram `json:"unavailable_ms"`
	// Sections completed, over Seconds of the run's history.
	Sections int64   `json:"sections"`
	Seconds  float64 `json:"seconds"`
	// RenewFailures are renewals that failed or got no answer.
	RenewFailures int64 `json:"renew_failures"`
	// FenceRejects are requests the store turned away for a stale token.
	FenceRejects int64 `json:"fence_rejects"`
	// WritesFailed and WritesOK are the writes the store refused and took:
	// under CAS on a version a refused write is a retry.
	WritesFailed int64 `json:"writes_failed"`
	WritesOK     int64 `json:"writes_ok"`
	// FirstAnomaly is the time from the first fault to the first anomaly
	// of a checker that judged the run invalid, in s; nil when there is
	// none, or no fault.
	FirstAnomaly *float64 `json:"first_anomaly_s,omitempty"`
	// Stopped is set for a run stopped at its first anomaly
	// (results.json's stopped_at_first_anomaly), which Measure cannot
	// tell from the history: cut short where it went wrong, its latencies
	// and throughput are no sample of the test's, so comparisons count its
	// verdict and anomalies but leave its measures out.
	Stopped bool `json:"stopped,omitempty"`
}

// CyclesPerSec is lock cycles (critical sections completed) per second.
func (r Run) CyclesPerSec() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Sections) / r.Seconds
}

// Measure measures a run from its time-ordered history and its checkers'
// results.
func Measure(h []history.Event, rs []checkers.Result) Run {
	var m Run
	refs, _ := history.Refs(h)
	for _, o := range refs {
		call, ret := &h[o.Call], &h[o.Ret]
		if o.Lone() || !o.Done {
			continue
		}
		ms := float64(ret.Time-call.Time) / 1e6
		switch call.F {
		case history.Acquire:
			if _, lease := history.LeaseOwner(call.Process); !lease {
				m.AcquireWait.Add(ms, ret.Type != history.OK)
			}
		case history.Renew:
			switch ret.Type {
			case history.OK:
				m.RenewRTT.Add(ms, false)
			default:
				m.RenewFailures++
			}
		case history.Write:
			switch ret.Type {
			case history.OK:
				m.WritesOK++
			case history.Fail:
				m.WritesFailed++
			}
		}
	}
	m.contention(h)
	for _, ns := range checkers.FaultUnavailability(h) {
		m.Unavailable.Add(float64(ns)/1e6, false)
	}
	if n, ok := checkers.SectionsCompleted(rs); ok {
		m.Sections = n
	}
	if len(h) > 0 {
		m.Seconds = float64(h[len(h)-1].Time-h[0].Time) / 1e9
	}
	firstFault, firstAnomaly := int64(math.MaxInt64), int64(math.MaxInt64)
	for i := range h {
		if e := &h[i]; e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info {
			firstFault = min(firstFault, e.Time)
		}
	}
	for _, r := range rs {
		m.FenceRejects += checkers.FenceRejects(r)
		if r.Valid != checkers.Invalid {
			continue
		}
		for _, a := range r.Anomalies {
			firstAnomaly = min(firstAnomaly, a.Time)
		}
	}
	if firstFault != math.MaxInt64 && firstAnomaly != math.MaxInt64 {
		s := float64(max(firstAnomaly-firstFault, 0)) / 1e9
		m.FirstAnomaly = &s
	}
	return m
}

// contention reads, acquire by acquire, who else held the lock or waited
// for it: the uncontended acquires and the hand-overs.
func (m *Run) contention(h []history.Event) {
	type state struct {
		waiting, holding, releasing bool
		invoked                     int64
		uncontended                 bool
	}
	clients := map[string]*state{}
	var waiting, holding int
	released := int64(-1) // the last release's completion, until a grant follows it
	for i := range h {
		e := &h[i]
		if e.Process == history.Nemesis {
			continue
		}
		if _, lease := history.LeaseOwner(e.Process); lease {
			continue
		}
		c := clients[e.Process]
		if c == nil {
			c = &state{}
			clients[e.Process] = c
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			// Uncontended means alone for the whole acquire: a client
			// that asks first and is then queued behind others who
			// asked after it measures their sections, not the service.
			// A client asking again holds nothing any more, whatever
			// became of its last release.
			if c.holding || c.releasing {
				c.holding, c.releasing = false, false
				holding--
			}
			c.uncontended = waiting == 0 && holding == 0
			for _, o := range clients {
				o.uncontended = o.uncontended && !o.waiting
			}
			c.waiting, c.invoked = true, e.Time
			waiting++
		case e.F == history.Acquire && c.waiting:
			c.waiting = false
			waiting--
			if e.Type != history.OK {
				continue
			}
			if c.uncontended {
				m.AcquireUncontended.Add(float64(e.Time-c.invoked)/1e6, false)
			}
			if released >= 0 && c.invoked <= released {
				m.Handover.Add(float64(e.Time-released)/1e6, false)
			}
			released = -1
			c.holding = true
			holding++
		case e.F == history.Release && e.Type == history.Invoke && c.holding:
			c.holding, c.releasing = false, true
		case e.F == history.Release && e.Type != history.Invoke:
			// The lock is held until its release completes.
			if c.releasing {
				c.releasing = false
				holding--
			}
			released = e.Time
		}
	}
}
