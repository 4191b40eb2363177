"""Writes a kerchunk JSON reference document as a Parquet reference set (kerchunk's
refs_to_dataframe, fastparquet), its paths dictionary-encoded.

usage: to_parquet.py DOCUMENT.json SET_DIRECTORY RECORD_SIZE
"""

import sys

from kerchunk.df import refs_to_dataframe

document, directory, record_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
refs_to_dataframe(document, directory, record_size=record_size, categorical_threshold=1)
