//! The dispatch events' packets, encoded straight into reused buffers: the bytes prost gives the
//! messages of [`super`] (fields in tag order, `optional` fields whenever set), without building
//! a message tree per event. The tests compare the two encodings.

use super::{EventType, SEQUENCE_ID, SEQ_NEEDS_INCREMENTAL_STATE};

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

/// An argument's name as its `DebugAnnotation.name_iid` field (1) encodes it: the name's number
/// in the sequence's interned names ([`super::interned`]), written before the argument's value.
#[derive(Clone, Copy)]
pub(super) struct Name {
    field: [u8; 11],
    len: usize,
}

impl Name {
    pub(super) fn interned(iid: u64) -> Name {
        let (field, len) = keyed_varint(1, iid);
        Name { field, len }
    }
}

/// A `TrackEvent`'s fields, in tag order: its category's interned number (3), the arguments
/// (debug annotations, 4), then [`Event::kind`] and the rest.
#[derive(Default)]
pub(super) struct Event {
    body: Vec<u8>,
    /// Whether the event refers to interned names (its packet then says it needs the sequence's
    /// incremental state).
    interned: bool,
}

impl Event {
    /// Starts a new event.
    pub(super) fn clear(&mut self) {
        self.body.clear();
        self.interned = false;
    }

    /// `category_iids` (3, one, not packed as the schema declares it): first.
    pub(super) fn category(&mut self, iid: u64) {
        key(&mut self.body, 3, VARINT);
        varint(&mut self.body, iid);
        self.interned = true;
    }

    /// A `DebugAnnotation` (4): `name_iid`, then its value's field (`value`, then `more` of it).
    fn annotation(&mut self, name: &Name, value: &[u8], more: &[u8]) {
        let len = name.len + value.len() + more.len();
        self.body.reserve(len + 11);
        key(&mut self.body, 4, LEN);
        varint(&mut self.body, len as u64);
        self.body.extend_from_slice(&name.field[..name.len]);
        self.body.extend_from_slice(value);
        self.body.extend_from_slice(more);
        self.interned = true;
    }

    /// [`Event::annotation`] of a value field of at most 11 bytes (`field`, its first `len`),
    /// copied as fixed-size blocks: the bytes past the annotation written and dropped again.
    fn small_annotation(&mut self, name: &Name, (field, len): ([u8; 11], usize)) {
        let body_len = name.len + len;
        let at = self.body.len();
        self.body.extend_from_slice(&[0u8; 2 + 11 + 11]);
        let out = &mut self.body[at..];
        // The annotation's key, and its length in one byte (22 < 128).
        out[0] = (4 << 3) | LEN;
        out[1] = body_len as u8;
        out[2..13].copy_from_slice(&name.field);
        out[2 + name.len..13 + name.len].copy_from_slice(&field);
        self.body.truncate(at + 2 + body_len);
        self.interned = true;
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

    /// `type` (9), the interned `name_iid` (10) where given, and `track_uuid` (11): after the
    /// arguments.
    pub(super) fn kind(&mut self, kind: EventType, name: Option<u64>, track: u64) {
        key(&mut self.body, 9, VARINT);
        varint(&mut self.body, kind as i32 as u64);
        if let Some(iid) = name {
            key(&mut self.body, 10, VARINT);
            varint(&mut self.body, iid);
            self.interned = true;
        }
        key(&mut self.body, 11, VARINT);
        varint(&mut self.body, track);
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
    /// length-delimited (what follows [`super::PACKET_FIELD`], as `encode_packet` gives it):
    /// `sequence_flags` (13) says it needs the sequence's interned names where it uses them.
    pub(super) fn packet(&self, time: u64, packet: &mut Vec<u8>) {
        let flags = u64::from(SEQ_NEEDS_INCREMENTAL_STATE);
        let len = 1
            + varint_len(time)
            + 1
            + varint_len(u64::from(SEQUENCE_ID))
            + 1
            + varint_len(self.body.len() as u64)
            + self.body.len()
            + if self.interned {
                1 + varint_len(flags)
            } else {
                0
            };
        varint(packet, len as u64);
        key(packet, 8, VARINT);
        varint(packet, time);
        key(packet, 10, VARINT);
        varint(packet, u64::from(SEQUENCE_ID));
        key(packet, 11, LEN);
        varint(packet, self.body.len() as u64);
        packet.extend_from_slice(&self.body);
        if self.interned {
            key(packet, 13, VARINT);
            varint(packet, flags);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode_packet, DebugAnnotation, TracePacket, TrackEvent};
    use super::*;

    #[test]
    fn an_event_encodes_to_the_bytes_prost_gives_its_messages() {
        let iids = [1, 127, 128, 16_384, u64::MAX];
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
            let iid = |i: usize| iids[i % iids.len()];
            let name = |i: usize| Name::interned(iid(i));
            let (named, annotated) = (n % 2 == 0, n != 1);
            if named {
                event.category(iid(n + 4));
            }
            if annotated {
                event.uint(&name(n), uint);
                event.int(&name(n + 1), int);
                event.double(&name(n + 2), double);
                event.text(&name(n + 3), texts[n % 3]);
            }
            let kind = [
                EventType::SliceBegin,
                EventType::SliceEnd,
                EventType::Counter,
            ][n % 3];
            event.kind(kind, named.then(|| iid(n + 1)), uint);
            if n == 3 {
                event.counter_value(double);
            }
            if n > 0 {
                event.terminating_flow(uint ^ 5);
            }
            let mut ours = Vec::new();
            event.packet(uint / 3, &mut ours);
            let annotation = |i: usize| DebugAnnotation {
                name_iid: Some(iid(i)),
                ..Default::default()
            };
            let debug_annotations = match annotated {
                false => Vec::new(),
                true => vec![
                    DebugAnnotation {
                        uint_value: Some(uint),
                        ..annotation(n)
                    },
                    DebugAnnotation {
                        int_value: Some(int),
                        ..annotation(n + 1)
                    },
                    DebugAnnotation {
                        double_value: Some(double),
                        ..annotation(n + 2)
                    },
                    DebugAnnotation {
                        string_value: Some(texts[n % 3].to_string()),
                        ..annotation(n + 3)
                    },
                ],
            };
            let expected = TracePacket {
                timestamp: Some(uint / 3),
                sequence_flags: (named || annotated).then_some(SEQ_NEEDS_INCREMENTAL_STATE),
                track_event: Some(TrackEvent {
                    category_iids: match named {
                        true => vec![iid(n + 4)],
                        false => Vec::new(),
                    },
                    debug_annotations,
                    r#type: Some(kind as i32),
                    name_iid: named.then(|| iid(n + 1)),
                    track_uuid: Some(uint),
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
