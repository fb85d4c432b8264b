package resp

// Kind is the type of a Value: one of RESP3's types.
type Kind uint8

// The kinds. The zero Value is a null.
const (
	KindNull      Kind = iota // "_" in RESP3, a nil bulk string in RESP2
	KindSimple                // a simple string, "+OK"
	KindError                 // an error reply, its text without "-"
	KindInt                   // an integer
	KindBulk                  // a bulk string
	KindArray                 // an array of Int elements
	KindMap                   // a map of Int pairs: key, value, key, value ...
	KindSet                   // a set of Int elements
	KindPush                  // an out-of-band push of Int elements (RESP3 only)
	KindBool                  // a boolean, Int 1 or 0
	KindDouble                // a double, its text (Redis's %.17g) in Str
	KindBigNumber             // a big number, its digits in Str
)

// Value is one RESP value. An aggregate's elements follow it in the slice
// that holds it (see the package's documentation).
type Value struct {
	Kind Kind
	// Int is an integer's value, a boolean's 1 or 0, and an aggregate's
	// count: its elements, or for a map its pairs.
	Int int64
	// Str is the text of a simple string, an error, a bulk string, a
	// double or a big number.
	Str string
}

// Null is a null.
func Null() Value { return Value{} }

// Simple is a simple string; line breaks in s are written as spaces.
func Simple(s string) Value { return Value{Kind: KindSimple, Str: s} }

// ErrorReply is an error reply whose text is msg, its first word the
// error's code ("ERR ..."); line breaks are written as spaces.
func ErrorReply(msg string) Value { return Value{Kind: KindError, Str: msg} }

// Int is an integer.
func Int(v int64) Value { return Value{Kind: KindInt, Int: v} }

// Bulk is a bulk string.
func Bulk(s string) Value { return Value{Kind: KindBulk, Str: s} }

// Array heads an array of n elements, which follow it.
func Array(n int) Value { return Value{Kind: KindArray, Int: int64(n)} }

// Map heads a map of n pairs, whose keys and values follow it in turn.
func Map(n int) Value { return Value{Kind: KindMap, Int: int64(n)} }

// Set heads a set of n elements, which follow it.
func Set(n int) Value { return Value{Kind: KindSet, Int: int64(n)} }

// Bool is a boolean.
func Bool(v bool) Value {
	if v {
		return Value{Kind: KindBool, Int: 1}
	}
	return Value{Kind: KindBool}
}

// Double is a double, written as text (Redis writes "%.17g", and "inf",
// "-inf" and "nan").
func Double(text string) Value { return Value{Kind: KindDouble, Str: text} }

// elements is how many values follow v as its elements.
func (v Value) elements() int64 {
	switch v.Kind {
	case KindArray, KindSet, KindPush:
		return max(v.Int, 0)
	case KindMap:
		return 2 * max(v.Int, 0)
	}
	return 0
}

// IsAggregate reports whether v heads elements: an array, a map, a set or
// a push.
func (v Value) IsAggregate() bool {
	switch v.Kind {
	case KindArray, KindMap, KindSet, KindPush:
		return true
	}
	return false
}

// Next splits vs after its first value and that value's elements, however
// deeply nested: first is the whole value, rest what follows it. A slice
// that ends inside the value is all first.
func Next(vs []Value) (first, rest []Value) {
	i := 0
	for need := int64(1); need > 0 && i < len(vs); need-- {
		need += vs[i].elements()
		i++
	}
	return vs[:i], vs[i:]
}
