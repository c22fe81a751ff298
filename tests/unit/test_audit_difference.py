"""The audit names the fields in which a live result differs from the offline fold."""

import orjson

from services.cli.audit import difference


def result(**fields):
    base = {"match_id": "m", "status": "accepted", "seq": 30, "duplicate": True, "view": {"seq": 54}}
    return orjson.dumps({**base, **fields})


def test_a_view_that_differs_is_named_when_the_brief_fields_are_equal():
    text = difference(result(view={"seq": 31}), result())
    assert text == "view.seq: got 31, expected 54"


def test_every_differing_field_is_named_and_long_values_are_cut():
    text = difference(result(duplicate=False, seq=32, view=["B" * 500]), result(), width=20)
    assert text.startswith("duplicate: got false, expected true; seq: got 32, expected 30; view: got ")
    assert "…" in text and len(text) < 200


def test_equal_fields_encoded_differently_are_said_to_be():
    assert difference(b'{"a": 1}', b'{"a":1}') == "the same fields, encoded differently"
