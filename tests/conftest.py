import pytest

import embsql


@pytest.fixture
def con():
    connection = embsql.connect()
    yield connection
    connection.close()
