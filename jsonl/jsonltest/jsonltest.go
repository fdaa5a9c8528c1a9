// Package jsonltest holds what the tests of jsonl's callers (history,
// store) share: the proof that an Own owns every string of a value, and
// the inputs their decoders are held to (fuzz corpora, golden files).
package jsonltest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/lockbench/lockbench/jsonl"
)

// OwnsEveryString decodes template's JSON without copies, has own settle
// its strings, overwrites the line, and fails t unless the value is still
// template: no string was left in memory that jsonl reuses for the next
// block. Every field of template must be set, so that a field added later
// is not missed; its strings need no escape in JSON, since a string with
// one is decoded into memory of its own and would hide a miss.
func OwnsEveryString[T any](t *testing.T, template T, own jsonl.Own[T]) {
	t.Helper()
	v := reflect.ValueOf(template)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the template leaves %s unset: set it, and own its strings if it has any", v.Type().Field(i).Name)
		}
	}
	line, err := json.Marshal(template)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonl.Strings
	for range 2 { // new words, then shared ones
		var got T
		if err := gojson.UnmarshalWithOption(line, &got, gojson.DecodeNoCopyString()); err != nil {
			t.Fatal(err)
		}
		own(&got, &s)
		for i := range line {
			line[i] = '#'
		}
		if !reflect.DeepEqual(got, template) {
			t.Fatalf("a string was left in the line: %+v, want %+v", got, template)
		}
		if line, err = json.Marshal(template); err != nil {
			t.Fatal(err)
		}
	}
}

// Files reads every file that pattern matches.
func Files(tb testing.TB, pattern string) [][]byte {
	tb.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// FuzzSeeds reads the inputs of the seed corpus of the fuzz target named
// target (testdata/fuzz/<target>/*), each a file "go test fuzz v1" then
// []byte("...") quoted as in Go.
func FuzzSeeds(tb testing.TB, target string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, data := range Files(tb, filepath.Join("testdata", "fuzz", target, "*")) {
		_, arg, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")"))
		if err != nil {
			tb.Fatalf("%s seed %q: %v", target, arg, err)
		}
		out = append(out, []byte(s))
	}
	return out
}
