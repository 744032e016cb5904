import pytest

import embsql


@pytest.fixture
def con():
    connection = embsql.connect()
    yield connection
    connection.close()

pytest_plugins = ["pgvector_fixtures"]  # the pgvector fixture (PostgreSQL with pgvector, from pgserver)
