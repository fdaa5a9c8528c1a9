package store

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/lockbench/lockbench/history"
)

// Request is the body of a read or a write.
type Request struct {
	Req    string `json:"req"`
	Client string `json:"client"`
	Key    string `json:"key"`
	Token  int64  `json:"token,omitempty"`
	Value  int64  `json:"value,omitempty"` // writes only
	// Set, on a write, stores a set; the set workload's keys hold sets.
	Set []int64 `json:"set,omitempty"`
	// IfVersion makes a write conditional: it is applied only while the
	// key's version (its count of accepted writes) is still this one.
	IfVersion *int64 `json:"if_version,omitempty"`
}

// Response answers a request.
type Response struct {
	Value    int64   `json:"value"`
	Set      []int64 `json:"set,omitempty"`
	Version  int64   `json:"version"`
	Outcome  string  `json:"outcome"`
	MaxToken int64   `json:"max_token,omitempty"`
	Reason   string  `json:"reason,omitempty"`
}

// Server applies requests one at a time, in the order it logs them.
type Server struct {
	fence Fence
	epoch int64

	mu        sync.Mutex
	values    map[string]int64
	sets      map[string][]int64
	versions  map[string]int64
	maxWrite  map[string]int64 // highest token accepted on a write, per key
	maxAny    map[string]int64 // highest token accepted on any request, per key
	seq       int64
	log       *os.File
	logFailed error
}

// NewServer logs to logPath; epoch is the run's start on the monotonic clock.
func NewServer(fence Fence, logPath string, epoch int64) (*Server, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open store log: %w", err)
	}
	return &Server{
		fence: fence, epoch: epoch, log: f,
		values: map[string]int64{}, sets: map[string][]int64{}, versions: map[string]int64{}, maxWrite: map[string]int64{}, maxAny: map[string]int64{},
	}, nil
}

// HealthPath answers GET with 204 while the store serves.
const HealthPath = "/health"

// Handler serves POST /read and POST /write.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /read", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "read") })
	mux.HandleFunc("POST /write", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "write") })
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return mux
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, op string) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" || req.Req == "" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	resp, err := s.Apply(op, req)
	if err != nil {
		// The log is the evidence: a request that cannot be logged must not
		// look applied to the client.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	status := http.StatusOK
	if resp.Outcome == Rejected {
		status = http.StatusConflict
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// Apply runs one request against the fence rules and logs it before answering.
func (s *Server) Apply(op string, req Request) (Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logFailed != nil {
		return Response{}, s.logFailed
	}
	prev := s.values[req.Key]
	e := Entry{
		Seq: s.seq, Time: history.Mono() - s.epoch, Req: req.Req, Client: req.Client,
		Op: op, Key: req.Key, Token: req.Token, Prev: prev, Outcome: Accepted,
	}
	seen := s.maxAny[req.Key]
	if s.fence == FenceWrites {
		seen = s.maxWrite[req.Key]
	}
	e.MaxToken = seen
	checked := s.fence == FenceAll || (s.fence == FenceWrites && op == "write")
	version := s.versions[req.Key]
	switch {
	case checked && req.Token < seen:
		e.Outcome = Rejected
		e.Reason = fmt.Sprintf("stale token %d < %d", req.Token, seen)
	case op == "write" && req.IfVersion != nil && *req.IfVersion != version:
		e.Outcome = Rejected
		e.Reason = fmt.Sprintf("version %d, not %d", version, *req.IfVersion)
	}
	if op == "write" {
		e.Value, e.Set = req.Value, req.Set
	} else {
		e.Value, e.Set = prev, s.sets[req.Key]
	}
	if e.Outcome == Accepted {
		if op == "write" {
			s.values[req.Key] = req.Value
			if req.Set != nil {
				s.sets[req.Key] = req.Set
			}
			s.versions[req.Key]++
			s.maxWrite[req.Key] = max(s.maxWrite[req.Key], req.Token)
		}
		s.maxAny[req.Key] = max(s.maxAny[req.Key], req.Token)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return Response{}, fmt.Errorf("encode log entry: %w", err)
	}
	if _, err := s.log.Write(append(line, '\n')); err != nil {
		s.logFailed = fmt.Errorf("write store log: %w", err)
		return Response{}, s.logFailed
	}
	s.seq++
	return Response{Value: e.Value, Set: e.Set, Version: s.versions[req.Key], Outcome: e.Outcome, MaxToken: seen, Reason: e.Reason}, nil
}

// Close closes the log.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Close()
}
