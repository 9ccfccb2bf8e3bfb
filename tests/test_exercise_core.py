"""palviz.exercises.core: the feedback a student reads, phrased for the usual mistakes."""

import numpy as np

from palviz.exercises import (
    Exercise,
    call_student,
    compare_array,
    compare_number,
    not_a_function,
    read_choice,
)


def test_compare_number_names_sign_factor_percent_and_type():
    assert compare_number(0.5, 0.5) is None
    assert "wrong sign" in compare_number(-0.5, 0.5)
    assert "factor of 2" in compare_number(1.0, 0.5)
    assert "percentage" in compare_number(50.0, 0.5)
    assert "should be a number" in compare_number("0.5", 0.5)
    assert "times the expected" in compare_number(0.7, 0.5)
    assert compare_number(np.float32(0.5), 0.5) is None


def test_compare_array_names_shape_transpose_sign_and_factor():
    e = np.arange(6.0).reshape(2, 3) + 1
    assert compare_array(e.copy(), e) is None
    assert "transposed" in compare_array(e.T, e)
    assert "wrong sign" in compare_array(-e, e)
    assert "3 times" in compare_array(3 * e, e)
    off = e.copy()
    off[1, 2] += 1
    assert "(at index (1, 2))" in compare_array(off, e)


def test_read_choice_accepts_quotes_and_case_and_names_the_choices():
    assert read_choice(" 'Grows' ", ("grows", "shrinks")) == ("grows", None)
    assert (
        read_choice("up", ("grows", "shrinks"))[1] == "answer one of 'grows', 'shrinks', got 'up'"
    )
    assert "(a string)" in read_choice(3, ("grows",))[1]


def test_an_exercise_reports_the_blank_a_wrong_answer_and_a_raising_function():
    q = Exercise("00.q1", "x", lambda a: compare_number(a(), 2.0), "hint text", "answer = f")
    blank = q.check(...)
    assert not blank and not blank.answered and "hint text" in str(blank)
    assert str(q.check(lambda: 2.0)).startswith("Right.")
    wrong = q.check(lambda: 4.0)
    assert not wrong and wrong.answered and "factor of 2" in str(wrong)
    raised = q.check(lambda: 1 / 0)
    assert not raised and "ZeroDivisionError" in str(raised)
    assert "Not yet." in raised._repr_markdown_()


def test_a_write_this_function_exercise_names_a_non_function_and_the_call_that_failed():
    def judge(fn):
        problem = not_a_function(fn, "def double(x): ...; answer = double")
        if problem is not None:
            return problem
        for x in (1, 0):
            problem = compare_number(call_student(f"double({x})", fn, x), 2.0 * x, name="out")
            if problem is not None:
                return problem
        return None

    q = Exercise("00.q2", "x", judge, "hint", "answer = double")
    assert str(q.check(lambda x: 2 * x)).startswith("Right.")
    told = str(q.check(3))
    assert "answer should be your function (def double(x): ...; answer = double), got int" in told
    told = str(q.check(lambda x: 2 / x))  # right at 1, fails at 0
    assert "double(0) raised ZeroDivisionError: division by zero" in told
