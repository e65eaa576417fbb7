"""scalebook.notebook.table: rows shown as an HTML table (the book, Jupyter, Colab) or as text."""
import pytest

from scalebook import Error
from scalebook.notebook import table


def test_html_has_one_header_cell_per_column_and_one_row_per_dict():
    html = table([{"chips": 8, "seconds": 1.5}, {"chips": 16, "seconds": 0.75}])._repr_html_()
    assert html.count("<th>") == 2 and html.count("<tr>") == 3
    assert "<td>0.75</td>" in html


def test_large_floats_get_thousands_separators_and_no_decimals():
    assert "<td>12,346</td>" in table([{"tokens": 12345.6}])._repr_html_()


def test_columns_choose_and_order_the_keys():
    html = table([{"a": 1, "b": 2}], columns=["b"])._repr_html_()
    assert "<th>b</th>" in html and "<th>a</th>" not in html


def test_text_is_escaped():
    assert "&lt;x&gt;" in table([{"name": "<x>"}])._repr_html_()


def test_plain_text_lines_up_the_columns():
    text = repr(table([{"layout": "FSDP64", "tokens": 1.5}, {"layout": "TP8", "tokens": 20.0}]))
    assert text.splitlines() == ["layout  tokens", "FSDP64  1.5   ", "TP8     20    "]


def test_no_rows_is_an_error():
    with pytest.raises(Error):
        table([])
