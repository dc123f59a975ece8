//! The dispatch events' packets, encoded straight into reused buffers: the bytes prost gives the
//! messages of [`super`] (fields in tag order, `optional` fields whenever set), without building
//! a message tree per event. The tests compare the two encodings.

use super::{EventType, SEQUENCE_ID};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_len(value: u64) -> usize {
    // 1 byte per started 7 bits, at least one.
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

fn key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    varint(out, u64::from(tag << 3) | u64::from(wire));
}

fn text(out: &mut Vec<u8>, tag: u32, value: &str) {
    key(out, tag, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value.as_bytes());
}

/// A `TrackEvent`'s fields, in tag order: [`Event::args`] first (debug annotations, 4), then
/// [`Event::kind`] and the rest.
#[derive(Default)]
pub(super) struct Event {
    body: Vec<u8>,
}

/// `DebugAnnotation`'s fields: `uint_value` 3, `int_value` 4, `double_value` 5, `string_value`
/// 6, `name` 10.
enum Value<'a> {
    Uint(u64),
    Int(i64),
    Double(f64),
    Text(&'a str),
}

impl Event {
    /// Starts a new event.
    pub(super) fn clear(&mut self) {
        self.body.clear();
    }

    fn annotation(&mut self, name: &str, value: Value) {
        let value_len = match value {
            Value::Uint(v) => 1 + varint_len(v),
            Value::Int(v) => 1 + varint_len(v as u64),
            Value::Double(_) => 1 + 8,
            Value::Text(s) => 1 + varint_len(s.len() as u64) + s.len(),
        };
        let len = value_len + 1 + varint_len(name.len() as u64) + name.len();
        key(&mut self.body, 4, LEN);
        varint(&mut self.body, len as u64);
        match value {
            Value::Uint(v) => {
                key(&mut self.body, 3, VARINT);
                varint(&mut self.body, v);
            }
            Value::Int(v) => {
                key(&mut self.body, 4, VARINT);
                varint(&mut self.body, v as u64);
            }
            Value::Double(v) => {
                key(&mut self.body, 5, FIXED64);
                self.body.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            Value::Text(s) => text(&mut self.body, 6, s),
        }
        text(&mut self.body, 10, name);
    }

    pub(super) fn uint(&mut self, name: &str, value: u64) {
        self.annotation(name, Value::Uint(value));
    }

    pub(super) fn int(&mut self, name: &str, value: i64) {
        self.annotation(name, Value::Int(value));
    }

    pub(super) fn double(&mut self, name: &str, value: f64) {
        self.annotation(name, Value::Double(value));
    }

    pub(super) fn text(&mut self, name: &str, value: &str) {
        self.annotation(name, Value::Text(value));
    }

    /// `type` (9) and `track_uuid` (11): after the arguments.
    pub(super) fn kind(&mut self, kind: EventType, track: u64) {
        key(&mut self.body, 9, VARINT);
        varint(&mut self.body, kind as i32 as u64);
        key(&mut self.body, 11, VARINT);
        varint(&mut self.body, track);
    }

    /// `categories` (22, one) and `name` (23): after [`Event::kind`].
    pub(super) fn named(&mut self, category: &str, name: &str) {
        text(&mut self.body, 22, category);
        text(&mut self.body, 23, name);
    }

    /// `double_counter_value` (44): after [`Event::kind`].
    pub(super) fn counter_value(&mut self, value: f64) {
        key(&mut self.body, 44, FIXED64);
        self.body.extend_from_slice(&value.to_bits().to_le_bytes());
    }

    /// A `terminating_flow_ids` (48) entry: last.
    pub(super) fn terminating_flow(&mut self, flow: u64) {
        key(&mut self.body, 48, FIXED64);
        self.body.extend_from_slice(&flow.to_le_bytes());
    }

    /// Appends to `packet` the `TracePacket` of this event at `time`, on the writer's sequence,
    /// length-delimited (what follows [`super::PACKET_FIELD`], as `encode_packet` gives it).
    pub(super) fn packet(&self, time: u64, packet: &mut Vec<u8>) {
        let len = 1
            + varint_len(time)
            + 1
            + varint_len(u64::from(SEQUENCE_ID))
            + 1
            + varint_len(self.body.len() as u64)
            + self.body.len();
        varint(packet, len as u64);
        key(packet, 8, VARINT);
        varint(packet, time);
        key(packet, 10, VARINT);
        varint(packet, u64::from(SEQUENCE_ID));
        key(packet, 11, LEN);
        varint(packet, self.body.len() as u64);
        packet.extend_from_slice(&self.body);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode_packet, DebugAnnotation, TracePacket, TrackEvent};
    use super::*;

    #[test]
    fn an_event_encodes_to_the_bytes_prost_gives_its_messages() {
        let names = ["begin_ns", "kind", "SQ_WAVES", "cache", ""];
        let texts = ["", "flushed", &"x".repeat(200)];
        for (n, (uint, int, double)) in [
            (0, 0, 0.0),
            (127, -1, f64::NAN),
            (u64::MAX, i64::MIN, 1.5e300),
            (300, 11, -0.0),
        ]
        .into_iter()
        .enumerate()
        {
            let mut event = Event::default();
            event.uint(names[n], uint);
            event.int(names[(n + 1) % 5], int);
            event.double(names[(n + 2) % 5], double);
            event.text(names[(n + 3) % 5], texts[n % 3]);
            let kind = [
                EventType::SliceBegin,
                EventType::SliceEnd,
                EventType::Counter,
            ][n % 3];
            event.kind(kind, uint);
            if n % 2 == 0 {
                event.named("kernel_dispatch", texts[(n + 1) % 3]);
            }
            if n == 3 {
                event.counter_value(double);
            }
            if n > 0 {
                event.terminating_flow(uint ^ 5);
            }
            let mut ours = Vec::new();
            event.packet(uint / 3, &mut ours);
            let annotation = |name: &str| DebugAnnotation {
                name: Some(name.to_string()),
                ..Default::default()
            };
            let expected = TracePacket {
                timestamp: Some(uint / 3),
                track_event: Some(TrackEvent {
                    debug_annotations: vec![
                        DebugAnnotation {
                            uint_value: Some(uint),
                            ..annotation(names[n])
                        },
                        DebugAnnotation {
                            int_value: Some(int),
                            ..annotation(names[(n + 1) % 5])
                        },
                        DebugAnnotation {
                            double_value: Some(double),
                            ..annotation(names[(n + 2) % 5])
                        },
                        DebugAnnotation {
                            string_value: Some(texts[n % 3].to_string()),
                            ..annotation(names[(n + 3) % 5])
                        },
                    ],
                    r#type: Some(kind as i32),
                    track_uuid: Some(uint),
                    categories: match n % 2 {
                        0 => vec!["kernel_dispatch".to_string()],
                        _ => Vec::new(),
                    },
                    name: (n % 2 == 0).then(|| texts[(n + 1) % 3].to_string()),
                    double_counter_value: (n == 3).then_some(double),
                    terminating_flow_ids: match n {
                        0 => Vec::new(),
                        _ => vec![uint ^ 5],
                    },
                    ..Default::default()
                }),
                ..Default::default()
            };
            let mut theirs = Vec::new();
            encode_packet(expected, &mut theirs);
            assert_eq!(ours, theirs, "case {n}");
        }
    }

    #[test]
    fn varint_lengths_match_the_encoding() {
        for value in [0, 1, 127, 128, 16_383, 16_384, u64::MAX / 3, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
        }
    }
}
