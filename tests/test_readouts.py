"""privtrans.book.readouts: the arithmetic readouts share never invents a value."""



def test_readout_arithmetic_never_invents_a_value():
    import math

    from privtrans.book import readouts

    assert readouts.num(None) is None and readouts.num(math.nan) is None and readouts.num("2.5") == 2.5
    assert readouts.ratio(1, 0) is None and readouts.ratio(1, -2) is None and readouts.ratio(None, 1) is None and readouts.ratio(3, 2) == 1.5
    assert readouts.strict(max, [1, None, 3]) is None and readouts.strict(all, []) is None and readouts.strict(min, [2, 1]) == 1
    assert readouts.mean([1.0, 2.0]) == 1.5 and readouts.mean([1.0, None]) is None
