"""`dfslab plan`: placement, balance, failures and growth of a Ceph cluster too big for any
test box, computed with Ceph's own crushtool, ceph-mon and osdmaptool (backends/ceph/planning.py).
`layout.py` is the layout file, `model.py` the crush map and the pools it implies,
`analysis.py` what the mappings say, `report.py` the HTML page."""
