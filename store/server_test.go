package store

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// step is one request and the outcome the fence mode must give it.
type step struct {
	op     string
	client string
	token  int64
	value  int64
	want   string
}

func TestFenceModes(t *testing.T) {
	// The stale-holder story: c1 (token 33) reads, c2 (token 34) reads and
	// writes, then c1 writes; and the variant where c2 has only read when c1
	// writes, which write-only fencing cannot see.
	cases := []struct {
		fence Fence
		steps []step
	}{
		{FenceNone, []step{
			{"read", "c1", 33, 0, Accepted}, {"read", "c2", 34, 0, Accepted}, {"write", "c2", 34, 1, Accepted},
			{"write", "c1", 33, 1, Accepted},
		}},
		{FenceWrites, []step{
			{"read", "c1", 33, 0, Accepted}, {"read", "c2", 34, 0, Accepted}, {"write", "c2", 34, 1, Accepted},
			{"write", "c1", 33, 1, Rejected}, {"read", "c1", 33, 0, Accepted},
		}},
		{FenceWrites, []step{
			{"read", "c1", 33, 0, Accepted}, {"read", "c2", 34, 0, Accepted},
			{"write", "c1", 33, 1, Accepted}, {"write", "c2", 34, 1, Accepted},
		}},
		{FenceAll, []step{
			{"read", "c1", 33, 0, Accepted}, {"read", "c2", 34, 0, Accepted},
			{"write", "c1", 33, 1, Rejected}, {"read", "c1", 33, 0, Rejected},
			{"write", "c2", 34, 1, Accepted}, {"write", "c2", 34, 2, Accepted},
		}},
	}
	for _, c := range cases {
		t.Run(string(c.fence), func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "store.log")
			s, err := NewServer(c.fence, logPath, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range c.steps {
				resp, err := s.Apply(st.op, Request{Req: st.client + "-" + string(rune('a'+i)), Client: st.client, Key: "x", Token: st.token, Value: st.value})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Outcome != st.want {
					t.Errorf("step %d (%s %s token %d): %s, want %s", i, st.client, st.op, st.token, resp.Outcome, st.want)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			log, err := ReadLogFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != len(c.steps) {
				t.Fatalf("log has %d entries, want %d", len(log), len(c.steps))
			}
			for i, e := range log {
				if e.Seq != int64(i) || e.Outcome != c.steps[i].want || e.Token != c.steps[i].token {
					t.Errorf("log entry %d = %+v, want seq %d outcome %s", i, e, i, c.steps[i].want)
				}
			}
		})
	}
}

func TestHTTPClientOutcomes(t *testing.T) {
	s, err := NewServer(FenceAll, filepath.Join(t.TempDir(), "store.log"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c := NewClient(srv.Listener.Addr().String(), time.Second)
	defer c.http.CloseIdleConnections()
	ctx := context.Background()
	if err := c.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, Request{Req: "c2-1", Client: "c2", Key: "x", Token: 5, Value: 7}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Read(ctx, Request{Req: "c2-2", Client: "c2", Key: "x", Token: 5})
	if err != nil || got.Value != 7 || got.Version != 1 {
		t.Fatalf("read = %+v, %v; want 7 at version 1", got, err)
	}
	err = c.Write(ctx, Request{Req: "c1-1", Client: "c1", Key: "x", Token: 4, Value: 1})
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("stale write: %v, want ErrRejected", err)
	}
	if got, _ := c.Read(ctx, Request{Req: "c2-3", Client: "c2", Key: "x", Token: 5}); got.Value != 7 {
		t.Errorf("rejected write changed the value to %d", got.Value)
	}
}

func TestParseFence(t *testing.T) {
	for _, s := range []string{"none", "writes", "all"} {
		if _, err := ParseFence(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseFence("some"); err == nil {
		t.Error("ParseFence(some) accepted")
	}
}

func TestReadLogRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not json":        "{\n",
		"unknown outcome": `{"seq":0,"req":"a","op":"write","key":"x","outcome":"maybe"}` + "\n",
		"unknown op":      `{"seq":0,"req":"a","op":"delete","key":"x","outcome":"accepted"}` + "\n",
	} {
		p := filepath.Join(dir, "log")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadLogFile(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A conditional write applies only while the version is the one read: the
// CAS workload needs no lock.
func TestConditionalWrite(t *testing.T) {
	s, err := NewServer(FenceNone, filepath.Join(t.TempDir(), "store.log"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v0 := int64(0)
	steps := []struct {
		req  Request
		want string
	}{
		{Request{Req: "a", Client: "c1", Key: "x", Value: 1, IfVersion: &v0}, Accepted},
		{Request{Req: "b", Client: "c2", Key: "x", Value: 1, IfVersion: &v0}, Rejected},
		{Request{Req: "c", Client: "c2", Key: "x", Value: 5}, Accepted},
	}
	for _, st := range steps {
		resp, err := s.Apply("write", st.req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Outcome != st.want {
			t.Errorf("%s: %s, want %s (%s)", st.req.Req, resp.Outcome, st.want, resp.Reason)
		}
	}
	if resp, _ := s.Apply("read", Request{Req: "d", Client: "c1", Key: "x"}); resp.Value != 5 || resp.Version != 2 {
		t.Errorf("read %+v, want value 5 at version 2", resp)
	}
}
