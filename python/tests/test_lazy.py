"""tenex.lazy(): statements recorded in the block run at its end, in order; reads inside the block
wait; arrays dropped inside the block stay valid; two Python threads run sets at once."""
import gc
import threading

import numpy as np
import pytest

import tenex


def test_statements_run_at_the_end_of_the_block():
    rng = np.random.default_rng(30)
    a, b = rng.uniform(-1, 1, (4, 5)), rng.uniform(-1, 1, (5, 3))
    c = np.zeros((4, 3))
    A, B, C = tenex.Tensor(a), tenex.Tensor(b), tenex.Tensor(c)
    with tenex.lazy():
        C["i,j"] = A["i,k"] * B["k,j"]
        assert C.pending
        assert not c.any()  # not run yet: the array is untouched
    assert not C.pending
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)


def test_program_order_and_reads_of_pending_results():
    a = np.arange(6.0).reshape(2, 3)
    A = tenex.Tensor(a)
    C, D = tenex.Tensor(), tenex.Tensor((2, 3))
    with tenex.lazy():
        C["i,j"] = A["i,j"] + 1.0
        D["i,j"] = C["i,j"] * 2.0  # reads the pending C
        C["i,j"] = C["i,j"] * 10.0  # a later write does not change D
    np.testing.assert_array_equal(D.numpy(), (a + 1) * 2)
    np.testing.assert_array_equal(C.numpy(), (a + 1) * 10)


def test_a_read_inside_the_block_waits_for_its_set():
    a = np.arange(4.0)
    C = tenex.Tensor()
    with tenex.lazy():
        C["i"] = tenex.Tensor(a)["i"] * 3.0
        inside = np.asarray(C).copy()  # waits
        np.testing.assert_array_equal(inside, 3 * a)
        C["i"] = C["i"] + 1.0
    np.testing.assert_array_equal(C.numpy(), 3 * a + 1)


def test_array_deleted_inside_the_block_stays_valid():
    rng = np.random.default_rng(31)
    expected = {}
    C = tenex.Tensor()
    with tenex.lazy():
        a = rng.uniform(-1, 1, (50, 40))
        b = rng.uniform(-1, 1, (40, 30))
        expected["c"] = a @ b
        A, B = tenex.Tensor(a), tenex.Tensor(b)
        C["i,j"] = A["i,k"] * B["k,j"]
        del a, b, A, B  # the last Python references
        gc.collect()
        # fresh allocations of the same size would reuse freed memory
        junk = [np.full((50, 40), 1e300) for _ in range(8)]
        del junk
    np.testing.assert_allclose(C.numpy(), expected["c"], rtol=1e-12)


def test_nested_blocks_join_the_outermost():
    C = tenex.Tensor((3,))
    with tenex.lazy():
        with tenex.lazy():
            C["i"] = tenex.Tensor(np.ones(3))["i"] * 2.0
        assert C.pending  # the inner block's end runs nothing
    np.testing.assert_array_equal(C.numpy(), [2.0, 2.0, 2.0])


def test_an_error_in_the_block_raises_at_its_end_and_the_others_run():
    good = tenex.Tensor((2,))
    L = tenex.Tensor()
    with pytest.raises(tenex.Error):
        with tenex.lazy():
            good["i"] = tenex.Tensor(np.ones(2))["i"] + 1.0
            L["i,j"] = tenex.cholesky(tenex.Tensor(-np.eye(2))["i,j"])
    np.testing.assert_array_equal(good.numpy(), [2.0, 2.0])
    with pytest.raises(tenex.Error):
        L.numpy()  # every read of the failed result raises
    # the block is closed: statements run at once again
    good["i"] = good["i"] * 2.0
    assert not good.pending


def test_eager_outside_the_block():
    C = tenex.Tensor((2,))
    C["i"] = tenex.Tensor(np.ones(2))["i"] * 5.0
    assert not C.pending
    np.testing.assert_array_equal(np.asarray(C), [5.0, 5.0])


def test_two_threads_run_sets_at_once():
    errors = []
    barrier = threading.Barrier(2)

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            barrier.wait()
            for step in range(30):
                a = rng.uniform(-1, 1, (60, 50))
                b = rng.uniform(-1, 1, (50, 40))
                C, D = tenex.Tensor(), tenex.Tensor()
                if step % 2:
                    with tenex.lazy():
                        C["i,j"] = tenex.Tensor(a)["i,k"] * tenex.Tensor(b)["k,j"]
                        D["i,j"] = 2.0 * C["i,j"] + 1.0
                else:
                    C["i,j"] = tenex.Tensor(a)["i,k"] * tenex.Tensor(b)["k,j"]
                    D["i,j"] = 2.0 * C["i,j"] + 1.0
                np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(D.numpy(), 2 * (a @ b) + 1, rtol=1e-12, atol=1e-12)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_gil_is_released_while_a_set_runs():
    # While one thread evaluates a large product, the other keeps running Python code.
    a = np.random.default_rng(32).uniform(-1, 1, (700, 700))
    A = tenex.Tensor(a)
    done = threading.Event()
    ticks = []

    def tick():
        while not done.is_set():
            ticks.append(1)

    ticker = threading.Thread(target=tick)
    ticker.start()
    try:
        C = tenex.Tensor()
        for _ in range(3):
            before = len(ticks)
            C["i,j"] = A["i,k"] * A["k,j"] * A["j,l"]
            ticked = len(ticks) - before
    finally:
        done.set()
        ticker.join()
    assert ticked > 0
