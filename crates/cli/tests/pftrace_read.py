"""Reads a kreplay .pftrace with Perfetto's own Python bindings of the full trace schema
(the `perfetto` package on PyPI: perfetto.protos.perfetto.trace.perfetto_trace_pb2) and prints
what it holds as JSON: processes, tracks and slices (begin/end paired per track), counter tracks
and their values, and how many fields the official schema did not recognise (a wrong field number
in the writer shows there). Interned names (categories, event names, argument names) are resolved
as Perfetto's trace processor does, per packet sequence from the packets before; a number not
defined by then is counted in `unresolved_iids`.

Usage: python3 pftrace_read.py FILE   (PYTHONPATH must reach perfetto and protobuf)
"""
import json
import sys

from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def unknown(message):
    """Unknown fields in `message` and every message field below it."""
    count = len(unknown_fields.UnknownFieldSet(message))
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        for item in (value if field.label == field.LABEL_REPEATED else [value]):
            count += unknown(item)
    return count


def annotation_value(a):
    kind = a.WhichOneof("value")
    return getattr(a, kind) if kind else None


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    out = {"packets": len(trace.packet), "unknown_fields": 0, "processes": [], "tracks": {},
           "slices": [], "counter_tracks": {}, "counters": [], "unmatched_ends": 0, "sequence_ids": sorted({p.trusted_packet_sequence_id for p in trace.packet}),
           "first_sequence_flags": trace.packet[0].sequence_flags if trace.packet else None}
    open_slices = {}
    interned = {}
    out["unresolved_iids"] = 0

    def resolve(sequence, table, iid):
        name = interned.get(sequence, {}).get(table, {}).get(iid)
        if name is None:
            out["unresolved_iids"] += 1
        return name

    for packet in trace.packet:
        out["unknown_fields"] += unknown(packet)
        sequence = packet.trusted_packet_sequence_id
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            interned[sequence] = {}
        if packet.HasField("interned_data"):
            tables = interned.setdefault(sequence, {})
            for table in ("event_categories", "event_names", "debug_annotation_names"):
                for entry in getattr(packet.interned_data, table):
                    tables.setdefault(table, {})[entry.iid] = entry.name
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.HasField("process"):
                out["processes"].append({"uuid": d.uuid, "pid": d.process.pid,
                                         "name": d.process.process_name, "cmdline": list(d.process.cmdline)})
            elif d.HasField("counter"):
                out["counter_tracks"][str(d.uuid)] = {"name": d.name, "parent": d.parent_uuid}
            else:
                out["tracks"][str(d.uuid)] = {"name": d.name, "parent": d.parent_uuid}
        elif packet.HasField("track_event"):
            e = packet.track_event
            track = str(e.track_uuid)
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                name = resolve(sequence, "event_names", e.name_iid) if e.HasField("name_iid") else e.name
                categories = list(e.categories) + [resolve(sequence, "event_categories", i) for i in e.category_iids]
                args = {(resolve(sequence, "debug_annotation_names", a.name_iid) if a.HasField("name_iid") else a.name):
                        annotation_value(a) for a in e.debug_annotations}
                open_slices.setdefault(track, []).append({
                    "name": name, "track": track, "ts": packet.timestamp,
                    "categories": categories,
                    "flow_ids": list(e.flow_ids),
                    "terminating_flow_ids": list(e.terminating_flow_ids),
                    "args": args})
            elif e.type == pb.TrackEvent.TYPE_COUNTER:
                value = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
                out["counters"].append({"track": track, "ts": packet.timestamp, "value": value})
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                if open_slices.get(track):
                    s = open_slices[track].pop()
                    s["dur"] = packet.timestamp - s["ts"]
                    out["slices"].append(s)
                else:
                    out["unmatched_ends"] += 1
    out["unclosed"] = sum(len(v) for v in open_slices.values())
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
