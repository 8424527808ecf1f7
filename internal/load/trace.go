package load

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokbench/tokbench/internal/infile"
)

// A trace is a user's own request log: when each request arrived and
// how many tokens went in and came out. ReadTrace accepts the common
// public layouts by their column (or key) names, case and spacing aside:
//
//   - Azure LLM inference traces (also Splitwise's): TIMESTAMP (a date and
//     time), ContextTokens, GeneratedTokens (CSV);
//   - BurstGPT: Timestamp (seconds), Request tokens, Response tokens (CSV;
//     failed requests, with no response tokens, are left out);
//   - Mooncake: timestamp (milliseconds), input_length, output_length (JSONL);
//   - generic: timestamp or arrival_time in seconds (timestamp_ms in
//     milliseconds), input_tokens or prompt_tokens, output_tokens or
//     completion_tokens (CSV or JSONL).
var (
	traceTime   = []string{"timestamp", "time", "arrival_time", "arrival_s", "timestamp_ms", "arrival_ms"}
	tracePrompt = []string{"contexttokens", "request tokens", "input_length", "input_tokens", "prompt_tokens", "prompt_len", "input_len"}
	traceOutput = []string{"generatedtokens", "response tokens", "output_length", "output_tokens", "completion_tokens", "output_len"}
)

// trace is a trace read from a file: its requests in arrival order, at
// their recorded times (seconds from the first), and the rows left out.
type trace struct {
	Path     string
	Layout   string // the columns it was read by
	Requests []Request
	Skipped  int // rows with no output tokens (failed requests)
}

// maxTraceRequests bounds a trace: far beyond a benchmark's length, low
// enough that a wrong file cannot exhaust memory.
const maxTraceRequests = 100_000

// ReadTrace reads a trace file (CSV, or JSON lines if its first
// non-blank character is '{') and replays it speedup times faster.
func ReadTrace(path string, speedup float64) (*trace, error) {
	if speedup <= 0 {
		return nil, fmt.Errorf("--speedup %g: must be above 0", speedup)
	}
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	first, err := firstByte(br)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	t := &trace{Path: path}
	type row struct {
		at             float64
		prompt, output int
	}
	var rows []row
	add := func(n int, at float64, prompt, output int) error {
		if prompt < 0 || output < 0 {
			return fmt.Errorf("row %d: negative token count", n)
		}
		if prompt > maxRequestTokens || output > maxRequestTokens {
			return fmt.Errorf("row %d: %d input and %d output tokens: at most %d each", n, prompt, output, maxRequestTokens)
		}
		if output == 0 {
			t.Skipped++
			return nil
		}
		if len(rows) == maxTraceRequests {
			return fmt.Errorf("trace %s: more than %d requests: cut it, or pass a part of it", path, maxTraceRequests)
		}
		rows = append(rows, row{at, max(prompt, 1), output})
		return nil
	}
	if first == '{' {
		err = readJSONTrace(br, t, add)
	} else {
		err = readCSVTrace(br, t, add)
	}
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("trace %s: no requests with output tokens in it", path)
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	t.Requests = make([]Request, len(rows))
	for i, r := range rows {
		t.Requests[i] = Request{ID: i, Conv: i, Prompt: r.prompt, Output: r.output, At: (r.at - rows[0].at) / speedup}
	}
	return t, nil
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return 0, errors.New("empty file")
		}
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' && b != 0xEF && b != 0xBB && b != 0xBF {
			return b, br.UnreadByte()
		}
	}
}

// columns finds the time, prompt and output columns among names.
func columns(names []string) (at, prompt, output int, unit float64, err error) {
	find := func(want []string) int {
		for _, w := range want {
			for i, n := range names {
				if strings.EqualFold(strings.TrimSpace(strings.TrimPrefix(n, "\ufeff")), w) {
					return i
				}
			}
		}
		return -1
	}
	at, prompt, output, unit = find(traceTime), find(tracePrompt), find(traceOutput), 1
	if at < 0 || prompt < 0 || output < 0 {
		return 0, 0, 0, 0, fmt.Errorf("columns %q: need a time (%s), input tokens (%s) and output tokens (%s)",
			names, strings.Join(traceTime, ", "), strings.Join(tracePrompt, ", "), strings.Join(traceOutput, ", "))
	}
	n := strings.ToLower(strings.TrimSpace(names[at]))
	if strings.HasSuffix(n, "_ms") || strings.EqualFold(names[prompt], "input_length") {
		unit = 1e-3 // Mooncake's timestamps are milliseconds
	}
	return at, prompt, output, unit, nil
}

// seconds reads a time: a number in unit seconds, or a date and time.
func seconds(s string, unit float64) (float64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		// Up to about 3000 years: a Unix time or an offset, never NaN,
		// an infinity or a time no duration can hold.
		if math.IsNaN(v) || math.Abs(v*unit) > maxTraceSeconds {
			return 0, fmt.Errorf("time %q: out of range (give seconds up to %.0e, or a date and time)", short(s), maxTraceSeconds)
		}
		return v * unit, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return float64(t.UnixNano()) / 1e9, nil
		}
	}
	return 0, fmt.Errorf("time %q: give seconds, or a date and time such as 2023-11-16 18:15:46.68", short(s))
}

// maxTraceSeconds bounds a trace's times (about 3000 years).
const maxTraceSeconds = 1e11

// short is a field as an error quotes it: at most 40 bytes of it, so that
// a huge field gives a short message.
func short(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + fmt.Sprintf("... (%d bytes)", len(s))
}

func readCSVTrace(r io.Reader, t *trace, add func(int, float64, int, int) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return fmt.Errorf("header: %w", err)
	}
	at, prompt, output, unit, err := columns(head)
	if err != nil {
		return err
	}
	t.Layout = fmt.Sprintf("CSV: %s, %s, %s", head[at], head[prompt], head[output])
	for n := 2; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if len(rec) <= max(at, prompt, output) {
			return fmt.Errorf("row %d: %d fields, the header has %d", n, len(rec), len(head))
		}
		ts, err := seconds(rec[at], unit)
		if err != nil {
			return fmt.Errorf("row %d: %w", n, err)
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(rec[prompt]))
		o, err2 := strconv.Atoi(strings.TrimSpace(rec[output]))
		if err1 != nil || err2 != nil {
			return fmt.Errorf("row %d: token counts %q and %q are not whole numbers", n, short(rec[prompt]), short(rec[output]))
		}
		if err := add(n, ts, p, o); err != nil {
			return err
		}
	}
}

func readJSONTrace(r io.Reader, t *trace, add func(int, float64, int, int) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var names []string
	var at, prompt, output int
	var unit float64
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return fmt.Errorf("line %d is not a JSON object: %w", n, err)
		}
		if names == nil {
			for k := range m {
				names = append(names, k)
			}
			slices.Sort(names)
			var err error
			if at, prompt, output, unit, err = columns(names); err != nil {
				return err
			}
			t.Layout = fmt.Sprintf("JSON lines: %s, %s, %s", names[at], names[prompt], names[output])
		}
		field := func(i int) (string, error) {
			v, ok := m[names[i]]
			if !ok {
				return "", fmt.Errorf("line %d: no %q", n, names[i])
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s, nil
			}
			return string(v), nil
		}
		ts, err := field(at)
		if err != nil {
			return err
		}
		sec, err := seconds(ts, unit)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		ps, err1 := field(prompt)
		outs, err2 := field(output)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		p, err1 := strconv.Atoi(ps)
		o, err2 := strconv.Atoi(outs)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("line %d: token counts %s and %s are not whole numbers", n, short(ps), short(outs))
		}
		if err := add(n, sec, p, o); err != nil {
			return err
		}
	}
	return sc.Err()
}

// maxRequestTokens bounds a traced request's input and output: beyond it
// no context holds the request.
const maxRequestTokens = 1 << 20

// Name is how the trace is named in results: its file name.
func (t *trace) Name() string { return "trace:" + filepath.Base(t.Path) }

// Workload sums the trace up as a workload (its prompts and outputs as
// empirical distributions), for results files and reports.
func (t *trace) Workload() Workload {
	w := Workload{Name: t.Name(), Prompt: dist{Kind: "list"}, Output: dist{Kind: "list"}}
	for _, r := range t.Requests {
		w.Prompt.Values = append(w.Prompt.Values, r.Prompt)
		w.Output.Values = append(w.Output.Values, r.Output)
	}
	return w
}

// Rate is the trace's mean arrival rate as replayed, requests per second.
func (t *trace) Rate() float64 {
	n := len(t.Requests)
	if n < 2 || t.Requests[n-1].At <= 0 {
		return 0
	}
	return float64(n-1) / t.Requests[n-1].At
}
