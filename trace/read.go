package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// The --trace-out file is JSON lines, one finished span per line, as the
// OTel SDK's stdout exporter writes them (tracetest.SpanStub). ReadSpans
// reads the fields tpu uses:
//
//	{"Name": "sigverify",
//	 "SpanContext": {"TraceID": "<32 hex>", "SpanID": "<16 hex>", ...},
//	 "Parent": {"TraceID": ..., "SpanID": ...},
//	 "StartTime": "<RFC 3339>", "EndTime": "<RFC 3339>",
//	 "Attributes": [{"Key": "tpu.batch", "Value": {"Type": "INT64", "Value": 7}}, ...],
//	 "Events": [{"Name": "tracer.received", "Time": "<RFC 3339>", "Attributes": [...]}, ...],
//	 "Links": [{"SpanContext": {"TraceID": ..., "SpanID": ...}, ...}, ...],
//	 ...}

// SpanRecord is one span read back from a trace file.
type SpanRecord struct {
	Name       string
	TraceID    string
	SpanID     string
	ParentID   string // empty for a root span
	Start, End time.Time
	Attributes map[string]any
	Events     []EventRecord
	Links      []LinkRecord // OTel span links, in the order the span has them
}

// LinkRecord is a span link: the span it names.
type LinkRecord struct {
	TraceID, SpanID string
}

// Duration returns End - Start.
func (s SpanRecord) Duration() time.Duration { return s.End.Sub(s.Start) }

// EventRecord is a span event.
type EventRecord struct {
	Name       string
	Time       time.Time
	Attributes map[string]any
}

type jsonAttr struct {
	Key   string
	Value struct {
		Type  string
		Value any
	}
}

type jsonSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	StartTime   time.Time
	EndTime     time.Time
	Attributes  []jsonAttr
	Events      []struct {
		Name       string
		Time       time.Time
		Attributes []jsonAttr
	}
	Links []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
}

func attrMap(as []jsonAttr) map[string]any {
	m := make(map[string]any, len(as))
	for _, a := range as {
		m[a.Key] = a.Value.Value
	}
	return m
}

// ReadSpans reads a trace file. A malformed line is an error naming its
// line number.
func ReadSpans(r io.Reader) ([]SpanRecord, error) {
	var out []SpanRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var js jsonSpan
		if err := json.Unmarshal(b, &js); err != nil {
			return out, fmt.Errorf("trace: line %d: %w", line, err)
		}
		s := SpanRecord{
			Name: js.Name, TraceID: js.SpanContext.TraceID, SpanID: js.SpanContext.SpanID,
			Start: js.StartTime, End: js.EndTime, Attributes: attrMap(js.Attributes),
		}
		if js.Parent.SpanID != "" && js.Parent.SpanID != "0000000000000000" {
			s.ParentID = js.Parent.SpanID
		}
		for _, e := range js.Events {
			s.Events = append(s.Events, EventRecord{Name: e.Name, Time: e.Time, Attributes: attrMap(e.Attributes)})
		}
		for _, l := range js.Links {
			s.Links = append(s.Links, LinkRecord{TraceID: l.SpanContext.TraceID, SpanID: l.SpanContext.SpanID})
		}
		out = append(out, s)
	}
	return out, sc.Err()
}
