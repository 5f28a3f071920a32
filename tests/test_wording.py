"""The house style of generated sentences (docs/STYLE.md), applied at display by posgeom.wording."""

from __future__ import annotations

import pytest

from posgeom.wording import WHY_WORDS_MAX, header_words, plain_plurals, plain_words, shortest_clauses, word_count


@pytest.mark.parametrize("text, expected", [
    # the template of the S6 decision rule: a list agrees in the plural, one name in the singular
    ("interpolate reach(es) the target-length table (0.944), reuse_last, new_rows fall(s) short",
     "interpolate reaches the target-length table (0.944), reuse_last, new_rows fall short"),
    ("ALiBi, RoPE reach(es) it", "ALiBi, RoPE reach it"),
    ("sinusoidal and RoPE fall(s) above", "sinusoidal and RoPE fall above"),
    ("1 pair(s) returned; 3 run(s) finished, 0 cell(s)", "1 pair returned; 3 runs finished, 0 cells"),
])
def test_template_plurals_agree_with_their_count_or_list(text, expected):
    assert plain_plurals(text) == expected
    assert "(s)" not in plain_plurals(text) and "(es)" not in plain_plurals(text)


def test_plain_words_rewords_identifiers_and_never_a_number():
    text = "99.8% in 93% under 'paper' and 21% under 'scale_free'; only 0 stands apart; 90 % interval"
    plain = plain_words(text)
    assert plain == ("99.8% in 93% under the paper's stress and 21% under the scale-free stress; "
                     "only position 0 stands apart; 90% interval")
    digits = [c for c in text if c.isdigit()]
    assert [c for c in plain if c.isdigit()] == digits


def test_shortest_clauses_keeps_the_deciding_finding_within_the_budget():
    why = ("pairs the sample tells apart end at 1.46× the floor (log10 ratio [+0.133, +0.195]); the "
           "order-insensitive control collapses (median sep(P) 1.0e-04); power 100% for the smallest effect")
    short = shortest_clauses(why, 18)
    assert short == "pairs the sample tells apart end at 1.46× the floor; the order-insensitive control collapses"
    # a finding with a number of its own before the colon is kept alone; "SST-2" is not such a number
    assert shortest_clauses("stress within 1e-29 of 0: the chord distance is Euclidean", 20) == "stress within 1e-29 of 0"
    assert shortest_clauses("SST-2's geometry is not flat: 3 directions stand out (share 0.34)", 20) == \
        "SST-2's geometry is not flat: 3 directions stand out"
    # a lone number in brackets stays (it is often the one that decides)
    assert "(0.944)" in shortest_clauses("a reaches the table (0.944), b falls short", 20)
    long = " ".join(["word"] * 80)
    assert word_count(shortest_clauses(long, 20)) <= 21 < WHY_WORDS_MAX


def test_headers_in_words():
    assert header_words("violation_rate") == "violation rate"
    assert header_words("mds:47") == "mds 47"
    assert header_words("scale-free stress") == "scale-free stress"


def test_plain_prose_keeps_quoted_options_and_fixes_percent_and_plurals():
    from posgeom.wording import plain_prose

    assert plain_prose("95 % of 3 seed(s) under 'scale_free'; x % y") == "95% of 3 seeds under 'scale_free'; x % y"


def test_clauses_keep_brackets_whole_and_common_clauses_need_every_value():
    from posgeom.wording import clauses, common_clauses

    assert clauses("0.1 [0.0, 0.2], n = 64 (SST-2, IMDB); chord") == ["0.1 [0.0, 0.2]", "n = 64 (SST-2, IMDB)", "chord"]
    assert common_clauses(["a, b, c", "c, a"]) == ["a", "c"]
    assert common_clauses(["a, b", ""]) == []
