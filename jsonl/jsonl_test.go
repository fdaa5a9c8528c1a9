package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type item struct {
	A int64  `json:"a"`
	B string `json:"b"`
}

// reference decodes data the way the decoders did before this package, one
// line at a time with bufio.Scanner and encoding/json.
func reference(data []byte) (values []item, errs, empty map[int]bool) {
	errs, empty = map[int]bool{}, map[int]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	for i := 0; sc.Scan(); i++ {
		var v item
		if len(sc.Bytes()) == 0 {
			errs[i], empty[i] = true, true
		} else if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			errs[i] = true
		}
		values = append(values, v)
	}
	return values, errs, empty
}

// Inputs of several blocks, with empty and CRLF lines falling on block
// edges, a line longer than a block, and one bad line, decode line for
// line as the reference does, from a file and from any reader.
func TestDecodeMatchesLineByLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bad := range []int{-1, 100, 15000} {
		var buf bytes.Buffer
		lines := 0
		for buf.Len() < 3*blockSize+blockSize/2 {
			switch k := rng.IntN(50); {
			case lines == bad:
				buf.WriteString(`{"a":1,"b":"x"` + "\n")
			case lines == 20000:
				fmt.Fprintf(&buf, `{"a":%d,"b":"%s"}`+"\n", lines, strings.Repeat("y", 5*blockSize/2))
			case k == 0:
				buf.WriteString("\n")
			case k == 1:
				fmt.Fprintf(&buf, `{"a":%d,"b":"crlf"}`+"\r\n", lines)
			default:
				fmt.Fprintf(&buf, `{"a":%d,"b":"%s"}`+"\n", lines, strings.Repeat("z", rng.IntN(200)))
			}
			lines++
		}
		buf.WriteString(`{"a":-1,"b":"no newline at the end"}`)
		data := buf.Bytes()
		wantValues, wantErrs, wantEmpty := reference(data)

		path := filepath.Join(t.TempDir(), "lines")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Decoded without copies, the strings are still the block's when
		// the line is done: one that own missed would read whatever the
		// next block put in its place.
		own := func(v *item, s *Strings) { s.Share(&v.B) }
		for name, r := range map[string]func() (*Lines[item], error){
			"file":          func() (*Lines[item], error) { return Decode[item](f, 8<<20, nil) },
			"reader":        func() (*Lines[item], error) { return Decode[item](bytes.NewReader(data), 8<<20, nil) },
			"file, owned":   func() (*Lines[item], error) { return Decode(f, 8<<20, own) },
			"reader, owned": func() (*Lines[item], error) { return Decode(bytes.NewReader(data), 8<<20, own) },
		} {
			got, err := r()
			if err != nil {
				t.Fatalf("bad line %d, %s: %v", bad, name, err)
			}
			if len(got.Values) != len(wantValues) {
				t.Fatalf("bad line %d, %s: %d lines, want %d", bad, name, len(got.Values), len(wantValues))
			}
			firstBad := -1
			for i := range wantValues {
				// Past a bad line, a block's lines are only told apart
				// as empty or not.
				if got.Err(i) == errSkipped {
					if firstBad < 0 || wantEmpty[i] {
						t.Fatalf("bad line %d, %s: line %d skipped", bad, name, i+1)
					}
					continue
				}
				if wantErrs[i] != (got.Err(i) != nil) {
					t.Fatalf("bad line %d, %s: line %d: error %v, want one: %v", bad, name, i+1, got.Err(i), wantErrs[i])
				}
				if got.Err(i) != nil && got.Err(i) != ErrEmpty && firstBad < 0 {
					firstBad = i
				}
				if got.Err(i) == nil && got.Values[i] != wantValues[i] {
					t.Fatalf("bad line %d, %s: line %d: %+v, want %+v", bad, name, i+1, got.Values[i], wantValues[i])
				}
			}
			if firstBad != bad {
				t.Fatalf("first bad line %d, want %d", firstBad, bad)
			}
		}
	}
}

// A line longer than allowed is an error of the read, as bufio.Scanner's.
func TestDecodeRefusesALineTooLong(t *testing.T) {
	data := []byte(`{"a":1}` + "\n" + `{"b":"` + strings.Repeat("x", 3*blockSize) + `"}` + "\n")
	if _, err := Decode[item](bytes.NewReader(data), blockSize, nil); !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("got %v, want %v", err, bufio.ErrTooLong)
	}
}
