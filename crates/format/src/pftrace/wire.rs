//! The dispatch events' packets, encoded straight into reused buffers: the bytes prost gives the
//! messages of [`super`] (fields in tag order, `optional` fields whenever set), without building
//! a message tree per event. The tests compare the two encodings.

use super::{EventType, SEQUENCE_ID};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn varint(out: &mut Vec<u8>, value: u64) {
    prost::encoding::encode_varint(value, out);
}

use prost::encoding::encoded_len_varint as varint_len;

/// The one-byte key of field `tag` (< 16; wire type varint, which `|= LEN` makes a length) and
/// `value` as a varint, in an array: the bytes and their count.
fn keyed_varint(tag: u8, mut value: u64) -> ([u8; 11], usize) {
    let mut field = [0u8; 11];
    field[0] = tag << 3;
    let mut len = 1;
    while value >= 0x80 {
        field[len] = value as u8 | 0x80;
        value >>= 7;
        len += 1;
    }
    field[len] = value as u8;
    (field, len + 1)
}

fn key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    varint(out, u64::from(tag << 3) | u64::from(wire));
}

fn text(out: &mut Vec<u8>, tag: u32, value: &str) {
    key(out, tag, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value.as_bytes());
}

/// The longest name field copied as a fixed-size block ([`Name`]).
const SHORT: usize = 32;

/// An argument's name as its `DebugAnnotation.name` field (10) encodes it: made once, copied into
/// each event that has the argument. A short one (most: `begin_ns`, `corr_id`, ...) is also kept
/// zero-padded to [`SHORT`] bytes, copied whole without a call per copy.
pub(super) struct Name {
    field: Vec<u8>,
    short: Option<[u8; SHORT]>,
}

impl Name {
    pub(super) fn new(name: &str) -> Name {
        let mut field = Vec::with_capacity(name.len() + 3);
        text(&mut field, 10, name);
        let short = (field.len() <= SHORT).then(|| {
            let mut short = [0u8; SHORT];
            short[..field.len()].copy_from_slice(&field);
            short
        });
        Name { field, short }
    }
}

/// `categories` (22, one) and `name` (23) of an event, for [`Event::named`].
pub(super) fn named(category: &str, name: &str) -> Vec<u8> {
    let mut fields = Vec::with_capacity(category.len() + name.len() + 6);
    text(&mut fields, 22, category);
    text(&mut fields, 23, name);
    fields
}

/// A `TrackEvent`'s fields, in tag order: the arguments first (debug annotations, 4), then
/// [`Event::kind`] and the rest.
#[derive(Default)]
pub(super) struct Event {
    body: Vec<u8>,
}

impl Event {
    /// Starts a new event.
    pub(super) fn clear(&mut self) {
        self.body.clear();
    }

    /// A `DebugAnnotation` (4): its value's field (`value`, then `more` of it), then `name`.
    fn annotation(&mut self, name: &Name, value: &[u8], more: &[u8]) {
        let len = value.len() + more.len() + name.field.len();
        self.body.reserve(len + 11);
        key(&mut self.body, 4, LEN);
        varint(&mut self.body, len as u64);
        self.body.extend_from_slice(value);
        self.body.extend_from_slice(more);
        self.body.extend_from_slice(&name.field);
    }

    /// [`Event::annotation`] of a value field of at most 11 bytes (`field`, its first `len`),
    /// copied as fixed-size blocks when the name is short: the bytes past the annotation written
    /// and dropped again.
    fn small_annotation(&mut self, name: &Name, (field, len): ([u8; 11], usize)) {
        let Some(short) = &name.short else {
            return self.annotation(name, &field[..len], &[]);
        };
        let body_len = len + name.field.len();
        let at = self.body.len();
        self.body.extend_from_slice(&[0u8; 2 + 11 + SHORT]);
        let out = &mut self.body[at..];
        // The annotation's key, and its length in one byte (11 + SHORT < 128).
        out[0] = (4 << 3) | LEN;
        out[1] = body_len as u8;
        out[2..13].copy_from_slice(&field);
        out[2 + len..2 + len + SHORT].copy_from_slice(short);
        self.body.truncate(at + 2 + body_len);
    }

    /// A `uint_value` (3) argument.
    pub(super) fn uint(&mut self, name: &Name, value: u64) {
        self.small_annotation(name, keyed_varint(3, value));
    }

    /// An `int_value` (4) argument.
    pub(super) fn int(&mut self, name: &Name, value: i64) {
        self.small_annotation(name, keyed_varint(4, value as u64));
    }

    /// A `double_value` (5) argument.
    pub(super) fn double(&mut self, name: &Name, value: f64) {
        let mut field = [0u8; 11];
        field[0] = (5 << 3) | FIXED64;
        field[1..9].copy_from_slice(&value.to_bits().to_le_bytes());
        self.small_annotation(name, (field, 9));
    }

    /// A `string_value` (6) argument.
    pub(super) fn text(&mut self, name: &Name, value: &str) {
        let (field, len) = keyed_varint(6, value.len() as u64);
        let mut field = field;
        field[0] |= LEN;
        self.annotation(name, &field[..len], value.as_bytes());
    }

    /// `type` (9) and `track_uuid` (11): after the arguments.
    pub(super) fn kind(&mut self, kind: EventType, track: u64) {
        key(&mut self.body, 9, VARINT);
        varint(&mut self.body, kind as i32 as u64);
        key(&mut self.body, 11, VARINT);
        varint(&mut self.body, track);
    }

    /// `categories` (22, one) and `name` (23), as [`named`] encodes them: after [`Event::kind`].
    pub(super) fn named(&mut self, fields: &[u8]) {
        self.body.extend_from_slice(fields);
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
        let names = [
            "begin_ns",
            "kind",
            "SQ_WAVES",
            "a_counter_name_longer_than_thirty_two_bytes",
            "",
        ];
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
            let name = |i: usize| Name::new(names[i % 5]);
            event.uint(&name(n), uint);
            event.int(&name(n + 1), int);
            event.double(&name(n + 2), double);
            event.text(&name(n + 3), texts[n % 3]);
            let kind = [
                EventType::SliceBegin,
                EventType::SliceEnd,
                EventType::Counter,
            ][n % 3];
            event.kind(kind, uint);
            if n % 2 == 0 {
                event.named(&named("kernel_dispatch", texts[(n + 1) % 3]));
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
}
