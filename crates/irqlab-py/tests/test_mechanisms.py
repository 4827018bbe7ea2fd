"""The mechanisms on their own: the posted descriptor, the moderators, the demo burst."""

import pytest

import irqlab


def test_posting_notifies_once_until_the_demux_clears_on():
    d = irqlab.PostedDescriptor()
    assert d.post(40) is True, "the first post sets ON: notify"
    assert d.post(41) is False and d.post(40) is False, "ON is set: no more notifications"
    assert d.on and d.pending() == [40, 41]
    rounds = d.demux(max_loop=3)
    assert rounds[0] == [40, 41] and all(r == [] for r in rounds[1:])
    assert not d.on and d.pending() == []
    assert d.post(42) is True, "ON was cleared: the next post notifies again"


def test_suppressed_notifications_are_left_pending():
    d = irqlab.PostedDescriptor()
    d.set_sn()
    assert d.post(50) is False and d.pending() == [50]
    assert d.clear_sn() is True, "clearing SN with bits pending asks for a notification"


def test_net_dim_moves_away_from_its_start_under_a_changing_load():
    m = irqlab.Moderator("net-dim")
    start = m.level
    # Bursts of many completions per interrupt, 10 µs apart, then a trickle.
    heavy = [(i * 10_000, 64, 64 * 4096) for i in range(2_000)]
    levels = m.step(heavy)
    assert len(levels) == len(heavy)
    assert m.counters["decisions"] > 0 and m.counters["events"] == len(heavy)
    assert set(levels) != {start}, "net_dim changed level"
    assert m.levels and m.profile == m.levels[m.level]


def test_gsim_and_none_are_not_per_queue_moderators():
    with pytest.raises(irqlab.IrqlabError, match="per-queue"):
        irqlab.Moderator("gsim")
    with pytest.raises(irqlab.IrqlabError):
        irqlab.Moderator("turbo")


def test_burst_replay_posted_notifies_less():
    r = irqlab.burst(messages=2_000)
    assert r["posted"]["notifications"] < r["remapped"]["notifications"]
    assert "PMN:" in r["text"]
