//! The dispatch events' packets, encoded straight into reused buffers: the bytes prost gives the
//! messages of [`super`] (fields in tag order, `optional` fields whenever set), without building
//! a message tree per event; an argument's bytes and a packet's header are put together in a
//! `u128` and stored at once. The tests compare the two encodings.

use super::{EventType, SEQUENCE_ID, SEQ_NEEDS_INCREMENTAL_STATE};
use crate::varint::{bits as varint_bits, put as varint, put_bits};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

/// Field `tag`'s key (`tag` < 16, wire type `wire`) and `value` as a varint, in the low bytes
/// of a `u128` (see [`varint_bits`]), and their count (at most 11).
#[inline]
fn field(tag: u8, wire: u8, value: u64) -> (u128, usize) {
    let (bits, len) = varint_bits(value);
    (u128::from((tag << 3) | wire) | bits << 8, len + 1)
}

fn key(out: &mut Vec<u8>, tag: u32, wire: u8) {
    varint(out, u64::from(tag << 3) | u64::from(wire));
}

/// An argument's name as its `DebugAnnotation.name_iid` field (1) encodes it: the name's number
/// in the sequence's interned names ([`super::interned`]), written before the argument's value.
#[derive(Clone, Copy)]
pub(super) struct Name {
    bits: u128,
    len: usize,
}

impl Name {
    pub(super) fn interned(iid: u64) -> Name {
        let (bits, len) = field(1, VARINT, iid);
        Name { bits, len }
    }
}

/// A `TrackEvent`'s fields, in tag order: its category's interned number (3), the arguments
/// (debug annotations, 4), then [`Event::kind`] and the rest.
#[derive(Clone, Default)]
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

    /// A `DebugAnnotation` (4): `name_iid`, then its value's field (`field`, then `more` of
    /// it).
    fn annotation(&mut self, name: &Name, (field, field_len): (u128, usize), more: &[u8]) {
        let len = name.len + field_len + more.len();
        key(&mut self.body, 4, LEN);
        varint(&mut self.body, len as u64);
        put_bits(&mut self.body, name.bits, name.len);
        put_bits(&mut self.body, field, field_len);
        self.body.extend_from_slice(more);
        self.interned = true;
    }

    /// [`Event::annotation`] of a value field of at most 11 bytes, its bytes put together in
    /// registers and stored at once where they fit 16 bytes (most do).
    #[inline]
    fn small_annotation(&mut self, name: &Name, (field, field_len): (u128, usize)) {
        let body_len = name.len + field_len;
        // The annotation's key, and its length in one byte (22 < 128).
        let head = u128::from((4 << 3) | LEN) | (body_len as u128) << 8;
        if 2 + body_len <= 16 {
            let bits = head | name.bits << 16 | field << (8 * (2 + name.len));
            put_bits(&mut self.body, bits, 2 + body_len);
        } else {
            put_bits(&mut self.body, head | name.bits << 16, 2 + name.len);
            put_bits(&mut self.body, field, field_len);
        }
        self.interned = true;
    }

    /// Appends the arguments `written` holds (written into it as into an event, its
    /// [`Event::kind`] and later fields left out): arguments that are the same for many events,
    /// encoded once.
    pub(super) fn append(&mut self, written: &Event) {
        self.body.extend_from_slice(&written.body);
        self.interned |= written.interned;
    }

    /// A `uint_value` (3) argument.
    #[inline]
    pub(super) fn uint(&mut self, name: &Name, value: u64) {
        self.small_annotation(name, field(3, VARINT, value));
    }

    /// An `int_value` (4) argument.
    #[inline]
    pub(super) fn int(&mut self, name: &Name, value: i64) {
        self.small_annotation(name, field(4, VARINT, value as u64));
    }

    /// A `double_value` (5) argument.
    #[inline]
    pub(super) fn double(&mut self, name: &Name, value: f64) {
        let bits = u128::from((5 << 3) | FIXED64) | u128::from(value.to_bits()) << 8;
        self.small_annotation(name, (bits, 9));
    }

    /// A `string_value` (6) argument.
    pub(super) fn text(&mut self, name: &Name, value: &str) {
        let field = field(6, LEN, value.len() as u64);
        self.annotation(name, field, value.as_bytes());
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
        const _: () = assert!(SEQUENCE_ID < 0x80 && SEQ_NEEDS_INCREMENTAL_STATE < 0x80);
        let flags = [(13 << 3) | VARINT, SEQ_NEEDS_INCREMENTAL_STATE as u8];
        let (time, time_len) = field(8, VARINT, time);
        let (body, body_len) = varint_bits(self.body.len() as u64);
        let len =
            time_len + 3 + body_len + self.body.len() + if self.interned { flags.len() } else { 0 };
        let (len, len_len) = varint_bits(len as u64);
        put_bits(packet, len, len_len);
        // The timestamp (8), the sequence (10), and the track event's key (11) and length.
        put_bits(packet, time, time_len);
        let sequence = [(10 << 3) | VARINT, SEQUENCE_ID as u8, (11 << 3) | LEN];
        let sequence = sequence
            .iter()
            .rev()
            .fold(0u128, |b, &byte| b << 8 | u128::from(byte));
        put_bits(packet, sequence | body << 24, 3 + body_len);
        packet.extend_from_slice(&self.body);
        if self.interned {
            packet.extend_from_slice(&flags);
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
