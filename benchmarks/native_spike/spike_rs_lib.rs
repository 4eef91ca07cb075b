use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple, PyString};
use pyo3::exceptions::PyValueError;

#[inline(always)]
fn varint(d: &[u8], pos: &mut usize, max: usize) -> PyResult<i64> {
    let mut v: u64 = 0;
    let mut shift = 0;
    for i in 0..max {
        let b = *d.get(*pos).ok_or_else(|| PyValueError::new_err("eof"))?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
        shift += 7;
        let _ = i;
    }
    Err(PyValueError::new_err("varint too long"))
}

#[inline(always)]
fn take<'a>(d: &'a [u8], pos: &mut usize, n: i64, end: usize) -> PyResult<Option<&'a [u8]>> {
    if n == -1 { return Ok(None); }
    if n < 0 || (n as usize) > end - *pos { return Err(PyValueError::new_err("bad length")); }
    let s = &d[*pos..*pos + n as usize];
    *pos += n as usize;
    Ok(Some(s))
}

#[pyfunction]
fn decode<'py>(py: Python<'py>, data: &[u8], start: usize, end: usize, count: usize) -> PyResult<Bound<'py, PyList>> {
    let d = &data[..end];
    let mut pos = start;
    let out = PyList::empty(py);
    let none = py.None();
    for _ in 0..count {
        let length = varint(d, &mut pos, 5)?;
        if length < 0 || length as usize > end - pos { return Err(PyValueError::new_err("bad record length")); }
        let rec_end = pos + length as usize;
        let attrs = *d.get(pos).ok_or_else(|| PyValueError::new_err("eof"))?;
        pos += 1;
        let ts = varint(d, &mut pos, 10)?;
        let off = varint(d, &mut pos, 5)?;
        let kn = varint(d, &mut pos, 5)?;
        let key = take(d, &mut pos, kn, rec_end)?;
        let vn = varint(d, &mut pos, 5)?;
        let value = take(d, &mut pos, vn, rec_end)?;
        let hn = varint(d, &mut pos, 5)?;
        let mut hs: Vec<Bound<'py, PyTuple>> = Vec::with_capacity(hn.max(0) as usize);
        for _ in 0..hn {
            let n = varint(d, &mut pos, 5)?;
            let k = take(d, &mut pos, n, rec_end)?.ok_or_else(|| PyValueError::new_err("null hkey"))?;
            let ks = PyString::new(py, std::str::from_utf8(k).map_err(|_| PyValueError::new_err("utf8"))?);
            let n = varint(d, &mut pos, 5)?;
            let v = take(d, &mut pos, n, rec_end)?;
            let vo: Py<PyAny> = match v { Some(v) => PyBytes::new(py, v).into_any().unbind(), None => none.clone_ref(py) };
            hs.push(PyTuple::new(py, [ks.into_any().unbind(), vo])?);
        }
        if pos != rec_end { return Err(PyValueError::new_err("size mismatch")); }
        let ko: Py<PyAny> = match key { Some(k) => PyBytes::new(py, k).into_any().unbind(), None => none.clone_ref(py) };
        let vo: Py<PyAny> = match value { Some(v) => PyBytes::new(py, v).into_any().unbind(), None => none.clone_ref(py) };
        let t = PyTuple::new(py, [off.into_pyobject(py)?.into_any().unbind(), ts.into_pyobject(py)?.into_any().unbind(),
                                  ko, vo, PyTuple::new(py, hs)?.into_any().unbind(), (attrs as i64).into_pyobject(py)?.into_any().unbind()])?;
        out.append(t)?;
    }
    Ok(out)
}

#[pymodule]
fn spike_rs(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    Ok(())
}
