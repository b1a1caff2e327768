"""Ceph from Debian's packages, vstart-style: MON(s), MGR, BlueStore OSDs, MDS + CephFS.

`section.py` is the spec's `ceph:` section; one module per daemon kind (mon, mgr, osd, mds), as
Rook keeps them apart; `backend.py` only orders them and answers for the cluster.
"""
