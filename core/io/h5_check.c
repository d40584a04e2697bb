/* h5_check.c - what dkv checks in a file before libhdf5 parses it (docs/RELIABILITY.md, "Fuzzing").
 *
 * libhdf5 1.10 trusts the addresses and sizes it finds in a file: a malformed file can crash it
 * (H5HG_read, H5A__close) or make it loop.  Those are upstream bugs, but part of a file can be
 * checked here with plain reads first: that it is a regular file (a FIFO or a device would block
 * or never end), the HDF5 signature, a superblock version libhdf5 1.10 reads, 8-byte addresses
 * and lengths (what dkv, h5py and libhdf5 write by default), the end-of-file address against the
 * file's size (a truncated file), and that the root group's object header lies inside the file
 * and starts like one.  What lies behind the root (object headers, B-trees, heaps) is left to
 * libhdf5. */
#include "io/h5_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t SIG[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
#define UNDEF_ADDR UINT64_MAX

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static bool read_at(int fd, uint64_t off, void *buf, size_t n)
{
    return pread(fd, buf, n, (off_t)off) == (ssize_t)n;
}

static dkv_status check_superblock(const char *path, int fd, uint64_t size, uint64_t off, dkv_err *err)
{
    uint8_t sb[96];
    size_t have = size - off < sizeof sb ? (size_t)(size - off) : sizeof sb;
    if (have < 48 || !read_at(fd, off, sb, have))
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 superblock cut short (%zu bytes): file truncated?", path, have);
    unsigned ver = sb[8], so, sl;
    size_t p;
    if (ver > 3)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 superblock version %u (libhdf5 1.10 reads 0 to 3)", path, ver);
    if (ver <= 1) {
        so = sb[13], sl = sb[14];
        p = ver == 0 ? 24 : 28;   /* fixed part; version 1 adds the indexed storage K and 2 reserved bytes */
    } else {
        so = sb[9], sl = sb[10];
        p = 12;
    }
    if (so != 8 || sl != 8)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 file with %u-byte addresses and %u-byte lengths (dkv reads "
                           "files with 8 and 8)", path, so, sl);
    size_t need = ver <= 1 ? p + 4 * 8 + 2 * 8 : p + 4 * 8 + 4;   /* v0/1: to the root entry's header address */
    if (have < need)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 superblock cut short (%zu of %zu bytes): file truncated?", path,
                           have, need);
    uint64_t base = le64(sb + p), eof = le64(sb + p + 16);
    uint64_t root = ver <= 1 ? le64(sb + p + 32 + 8) : le64(sb + p + 24);
    if (base != off)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 base address %llu, but the superblock is at byte %llu", path,
                           (unsigned long long)base, (unsigned long long)off);
    /* the end-of-file address counts from the start of the file (libhdf5 compares it with base +
     * the size after the base); other addresses count from the base */
    if (eof == UNDEF_ADDR || eof <= base)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 superblock without a valid end-of-file address", path);
    if (eof > size)
        return dkv_err_set(err, DKV_EFORMAT, "%s: truncated: the HDF5 superblock says %llu bytes, the file has %llu",
                           path, (unsigned long long)eof, (unsigned long long)size);
    if (root == UNDEF_ADDR || root >= eof - base || eof - base - root < 16)
        return dkv_err_set(err, DKV_EFORMAT, "%s: HDF5 root group header at address %llu lies outside the file "
                           "(%llu bytes)", path, (unsigned long long)root, (unsigned long long)eof);
    uint8_t oh[4];
    if (!read_at(fd, base + root, oh, sizeof oh) || !(oh[0] == 1 || memcmp(oh, "OHDR", 4) == 0))
        return dkv_err_set(err, DKV_EFORMAT, "%s: no HDF5 object header at the root group's address %llu", path,
                           (unsigned long long)root);
    return DKV_OK;
}

dkv_status dkv_h5__precheck(const char *path, dkv_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);   /* O_NONBLOCK: a FIFO does not hang open() */
    if (fd < 0)   /* DKV_EFORMAT as before this check: "not a results file I can read" */
        return dkv_err_set(err, DKV_EFORMAT, "%s: cannot open (%s)", path, strerror(errno));
    struct stat st;
    dkv_status s = DKV_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        s = dkv_err_set(err, DKV_EFORMAT, "%s: not a regular file (a results file is an HDF5 file)", path);
    } else {
        uint64_t size = (uint64_t)st.st_size, off = 0;
        uint8_t sig[8];
        /* the signature is at 0 or, after a user block, at 512, 1024, 2048, ... */
        while (off + sizeof sig <= size && !(read_at(fd, off, sig, sizeof sig) && memcmp(sig, SIG, 8) == 0))
            off = off ? off * 2 : 512;
        if (off + sizeof sig > size)
            s = dkv_err_set(err, DKV_EFORMAT, "%s: not an HDF5 file (no HDF5 signature in its %llu bytes)", path,
                            (unsigned long long)size);
        else
            s = check_superblock(path, fd, size, off, err);
    }
    close(fd);
    return s;
}

dkv_status dkv_h5_output_ok(const char *path, dkv_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return DKV_OK;   /* nothing there (or nothing dkv can see: creating it then names the failure) */
    if (S_ISDIR(st.st_mode))
        return dkv_err_set(err, DKV_EINVAL, "%s is a folder: give the results file's name", path);
    dkv_err why = {0};
    if (dkv_h5__precheck(path, &why) != DKV_OK) {
        const char *m = why.msg;
        size_t n = strlen(path);
        if (strncmp(m, path, n) == 0 && strncmp(m + n, ": ", 2) == 0)
            m += n + 2;   /* the reason without the path again */
        return dkv_err_set(err, DKV_EINVAL, "%s exists and is not a results file dkv may replace: %s; give another "
                           "name, or move it away", path, m);
    }
    return DKV_OK;
}

/* After H5Fopen: the root's format_version, when present, is an integer dkv can read (a file from a
 * newer dkv is refused by name instead of misread). */
dkv_status dkv_h5__check_version(hid_t root, const char *path, dkv_err *err)
{
    if (H5Aexists(root, "format_version") <= 0)
        return DKV_OK;
    hid_t a = H5Aopen(root, "format_version", H5P_DEFAULT);
    hid_t t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID, sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    int64_t v = -1;
    bool ok = t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(sp) == 1 &&
              H5Aread(a, H5T_NATIVE_INT64, &v) >= 0;
    if (t >= 0)
        H5Tclose(t);
    if (sp >= 0)
        H5Sclose(sp);
    if (a >= 0)
        H5Aclose(a);
    if (!ok)
        return dkv_err_set(err, DKV_EFORMAT, "%s: root attribute format_version is not an integer", path);
    if (v < 1 || v > DKV_H5_FORMAT_VERSION)
        return dkv_err_set(err, DKV_EFORMAT, "%s: format_version %lld (this dkv reads version %d%s)", path, (long long)v,
                           DKV_H5_FORMAT_VERSION, v > DKV_H5_FORMAT_VERSION ? ": written by a newer dkv" : "");
    return DKV_OK;
}
