"""Ids made in bulk (``ids.new_ids``, ``ids.id_stream``): the same text python-ulid writes, in
the order made, unique; and the writes that use them."""
from __future__ import annotations

from itertools import islice

import pytest
from ulid import ULID

from benchbook.domain import ids


@pytest.mark.parametrize("count", [0, 1, ids._FEW - 1, ids._FEW, 1000, 20_000])
def test_new_ids_write_what_python_ulid_writes_in_order(count: int) -> None:
    made = ids.new_ids(count)
    assert len(made) == count
    assert [str(ULID.from_str(i)) for i in made] == made  # the text is the ULID's own, character for character
    assert made == sorted(made) and len(set(made)) == count
    assert all(len(i) == ids.ID_LENGTH for i in made)


def test_new_ids_carry_every_bit() -> None:
    """Each of the 128 bits reaches the text: ids whose bytes are all zero, all one, or one bit
    set read back as the same bytes (the numpy path, ids given to its encoder directly)."""
    np = pytest.importorskip("numpy")
    assert np is not None
    given = [bytes(16), b"\xff" * 16, *[(1 << bit).to_bytes(16, "big") for bit in range(128)]]
    given += [given[0]] * ids._FEW  # past the few that python-ulid writes one by one
    made = ids._texts([ULID.from_bytes(b) for b in given])
    assert [ULID.from_str(t).bytes for t in made] == given
    assert made[1] == "7" + "Z" * 25


def test_id_stream_goes_on_past_a_batch_and_later_ids_are_later() -> None:
    stream = ids.id_stream(batch=ids._FEW)
    taken = list(islice(stream, 3 * ids._FEW + 5))
    assert taken == sorted(taken) and len(set(taken)) == len(taken)
    assert ids.new_id() > taken[-1]
